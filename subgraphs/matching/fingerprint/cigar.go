package fingerprint

import (
	"math"
	"sort"
)

// locateCigar finds the band through the cigar it wraps: the cigar's
// silhouette is the longest pair of near-parallel straight edges (a Hough
// transform on colour edges, within ±40° of vertical); the band is where,
// along the cigar, the cross-section stops looking like the cigar's
// wrapper (a different colour, or lettering). It returns the band and a
// quality in [0,1] (0: no cigar found).
func locateCigar(lab *raster) (box, float64) {
	w, h := lab.w, lab.h
	sm := box3(lab)
	// Colour gradients.
	type edge struct {
		x, y int
		ang  float64 // gradient direction
	}
	var edges []edge
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			var gx2, gy2, gxy float64
			for k := range 3 {
				gx := float64(sm.p[(y*w+x+1)*3+k] - sm.p[(y*w+x-1)*3+k])
				gy := float64(sm.p[((y+1)*w+x)*3+k] - sm.p[((y-1)*w+x)*3+k])
				gx2 += gx * gx
				gy2 += gy * gy
				gxy += gx * gy
			}
			// Di Zenzo: the dominant direction of the colour gradient.
			mag := math.Sqrt(0.5 * (gx2 + gy2 + math.Sqrt((gx2-gy2)*(gx2-gy2)+4*gxy*gxy)))
			if mag < 10 {
				continue
			}
			edges = append(edges, edge{x, y, 0.5 * math.Atan2(2*gxy, gx2-gy2)})
		}
	}
	// Hough: normal angle in [-40°, 40°] (lines within 40° of vertical),
	// 1° steps; rho in 1-px steps.
	const nTheta = 81
	diag := int(math.Hypot(float64(w), float64(h))) + 1
	nRho := 2*diag + 1
	acc := make([]int32, nTheta*nRho)
	cosT, sinT := make([]float64, nTheta), make([]float64, nTheta)
	for i := range nTheta {
		t := float64(i-40) * math.Pi / 180
		cosT[i], sinT[i] = math.Cos(t), math.Sin(t)
	}
	for _, e := range edges {
		// Gradient angle modulo π, as a normal in (-π/2, π/2].
		a := e.ang
		ti := int(math.Round(a*180/math.Pi)) + 40
		for d := -2; d <= 2; d++ {
			t := ti + d
			if t < 0 || t >= nTheta {
				continue
			}
			rho := int(math.Round(float64(e.x)*cosT[t]+float64(e.y)*sinT[t])) + diag
			acc[t*nRho+rho]++
		}
	}
	// Peaks, strongest first, with non-maximum suppression.
	type peak struct {
		t, r  int
		votes int32
	}
	var peaks []peak
	for t := range nTheta {
		for r := 1; r < nRho-1; r++ {
			v := acc[t*nRho+r]
			if v < int32(h/4) {
				continue
			}
			isMax := true
			for dt := -2; dt <= 2 && isMax; dt++ {
				for dr := -3; dr <= 3; dr++ {
					tt, rr := t+dt, r+dr
					if (dt == 0 && dr == 0) || tt < 0 || tt >= nTheta || rr < 0 || rr >= nRho {
						continue
					}
					if o := acc[tt*nRho+rr]; o > v || (o == v && (tt*nRho+rr) < t*nRho+r) {
						isMax = false
						break
					}
				}
			}
			if isMax {
				peaks = append(peaks, peak{t, r, v})
			}
		}
	}
	sort.Slice(peaks, func(i, j int) bool {
		if peaks[i].votes != peaks[j].votes {
			return peaks[i].votes > peaks[j].votes
		}
		return peaks[i].t*nRho+peaks[i].r < peaks[j].t*nRho+peaks[j].r
	})
	if len(peaks) > 30 {
		peaks = peaks[:30]
	}
	// The silhouette: the pair of near-parallel lines, far enough apart,
	// with the most votes.
	bestScore := 0.0
	var p1, p2 peak
	for i := range peaks {
		for j := i + 1; j < len(peaks); j++ {
			a, b := peaks[i], peaks[j]
			if abs(a.t-b.t) > 6 {
				continue
			}
			sep := math.Abs(float64(a.r - b.r))
			if sep < 0.18*float64(w) || sep > 0.95*float64(w) {
				continue
			}
			score := float64(min(a.votes, b.votes))*2 + float64(max(a.votes, b.votes))*0.5
			if score > bestScore {
				bestScore, p1, p2 = score, a, b
			}
		}
	}
	if bestScore == 0 {
		return box{}, 0
	}
	if p1.r > p2.r {
		p1, p2 = p2, p1
	}
	// Cigar axis: the mean normal angle; the lines x*cos + y*sin = rho.
	theta := float64(p1.t+p2.t-80) / 2 * math.Pi / 180
	c, s := math.Cos(theta), math.Sin(theta)
	r1, r2 := float64(p1.r-diag), float64(p2.r-diag)
	// Walk along the axis: position t on the axis direction (-s, c).
	mid := (r1 + r2) / 2
	half := (r2 - r1) / 2
	// Range of t over the image.
	tMin, tMax := math.Inf(1), math.Inf(-1)
	for _, p := range [][2]float64{{0, 0}, {float64(w), 0}, {0, float64(h)}, {float64(w), float64(h)}} {
		t := -p[0]*s + p[1]*c
		tMin, tMax = math.Min(tMin, t), math.Max(tMax, t)
	}
	nT := int(tMax - tMin)
	rowCol := make([][3]float64, nT)
	rowTex := make([]float64, nT)
	valid := make([]bool, nT)
	const samples = 48
	for i := range nT {
		t := tMin + float64(i) + 0.5
		var sum [3]float64
		var tex float64
		cnt := 0
		var prev [3]float64
		for k := range samples {
			q := mid + half*0.85*(2*(float64(k)+0.5)/samples-1)
			x, y := q*c-t*s, q*s+t*c
			if x < 0 || y < 0 || x >= float64(w) || y >= float64(h) {
				continue
			}
			p := sm.bilinear(x, y)
			for j := range 3 {
				sum[j] += p[j]
			}
			if cnt > 0 {
				tex += deltaE76(p, prev)
			}
			prev = p
			cnt++
		}
		if cnt >= samples/2 {
			valid[i] = true
			rowCol[i] = [3]float64{sum[0] / float64(cnt), sum[1] / float64(cnt), sum[2] / float64(cnt)}
			rowTex[i] = tex / float64(cnt)
		}
	}
	// The wrapper's colour and texture: medians over the rows.
	var ls, as, bs, ts []float64
	for i := range nT {
		if valid[i] {
			ls = append(ls, rowCol[i][0])
			as = append(as, rowCol[i][1])
			bs = append(bs, rowCol[i][2])
			ts = append(ts, rowTex[i])
		}
	}
	if len(ls) < 10 {
		return box{}, 0
	}
	med := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	wrap := [3]float64{med(ls), med(as), med(bs)}
	texMed := med(ts)
	diff := make([]float64, nT)
	band := make([]bool, nT)
	quiet := 0
	for i := range nT {
		if !valid[i] {
			continue
		}
		d := deltaE76(rowCol[i], wrap)/10 + math.Max(0, rowTex[i]-texMed-1.5)/2
		diff[i] = d
		band[i] = d > 1
		if d < 0.6 {
			quiet++
		}
	}
	// Close small gaps, then take the run with the most difference.
	for i := 1; i < nT-1; i++ {
		if !band[i] && valid[i] {
			lo, hi := max(0, i-3), min(nT, i+4)
			l, r := false, false
			for k := lo; k < i; k++ {
				l = l || band[k]
			}
			for k := i + 1; k < hi; k++ {
				r = r || band[k]
			}
			if l && r {
				band[i] = true
			}
		}
	}
	bestMass, b0, b1 := 0.0, 0, 0
	for _, r := range runs(band) {
		length := float64(r[1] - r[0])
		if length < 0.12*half || length > 1.6*half {
			continue
		}
		mass := 0.0
		for k := r[0]; k < r[1]; k++ {
			mass += math.Min(diff[k], 4)
		}
		if mass > bestMass {
			bestMass, b0, b1 = mass, r[0], r[1]
		}
	}
	if bestMass == 0 {
		return box{}, 0
	}
	tc := tMin + float64(b0+b1)/2
	// Half-width at the band (the lines may converge: perspective).
	bx := box{
		cx:    mid*c - tc*s,
		cy:    mid*s + tc*c,
		angle: theta,
		halfW: half,
		halfH: float64(b1-b0) / 2,
	}
	// Where the band's axis meets each silhouette line (they may converge:
	// perspective).
	var us [2]float64
	for i, p := range []peak{p1, p2} {
		ti := float64(p.t-40) * math.Pi / 180
		nx, ny := math.Cos(ti), math.Sin(ti)
		den := c*nx + s*ny
		us[i] = (float64(p.r-diag) - (bx.cx*nx + bx.cy*ny)) / den
	}
	if us[1]-us[0] > 0.5*half {
		bx.cx, bx.cy = bx.point((us[0]+us[1])/2, 0)
		bx.halfW = (us[1] - us[0]) / 2
	}
	// Quality: the wrapper is quiet outside the band, the band is distinct.
	quietFrac := float64(quiet) / float64(len(ls))
	contrast := math.Min(1, bestMass/float64(b1-b0)/2)
	aspect := bx.halfW / bx.halfH
	shape := 1.0
	if aspect < 1.5 || aspect > 9 {
		shape = 0.3
	}
	bx.conf = quietFrac * contrast * shape
	return bx, bx.conf
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
