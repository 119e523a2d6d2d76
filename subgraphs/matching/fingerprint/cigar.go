package fingerprint

import (
	"math"
	"sort"
)

// locateCigar finds the band through the cigar it wraps: the cigar's
// silhouette is the longest pair of near-parallel straight edges (a Hough
// transform on colour edges, within ±40° of vertical); the band is where,
// along the cigar, the cross-section stops looking like the cigar's
// wrapper (a different colour, or lettering). Hypotheses are ranked by
// that contrast, the cigar's width and the lines' length, then by how well
// the band's own edges agree with the silhouette's angle. It returns the
// band and a quality in [0,1] (0: no cigar found).
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
			if mag < 6 {
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
			if v < int32(h/6) {
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
	// Hypotheses: each strong line is one silhouette edge; the cigar lies
	// on one side of it, up to a parallel line (the other edge) or, when the
	// other edge is out of frame or not found, to 0.9 of the width.
	type hyp struct {
		b box
		q float64
	}
	var hyps []hyp
	for i := range min(len(peaks), 20) {
		a := peaks[i]
		for _, side := range []float64{-1, 1} {
			var other *peak
			for j := range peaks {
				b := peaks[j]
				// Perspective tilts the two silhouettes apart, by up to
				// about 8° in a careless photo.
				if j == i || abs(a.t-b.t) > 8 {
					continue
				}
				sep := float64(b.r-a.r) * side
				if sep < 0.18*float64(w) || sep > 0.95*float64(w) {
					continue
				}
				if other == nil || b.votes > other.votes {
					other = &peaks[j]
				}
			}
			ra := float64(a.r - diag)
			theta := float64(a.t-40) * math.Pi / 180
			type cand struct {
				rb, penalty float64
				other       *peak
			}
			var cs []cand
			if other != nil {
				rb := float64(other.r - diag)
				theta = (float64(a.t-40)*float64(a.votes) + float64(other.t-40)*float64(other.votes)) / float64(a.votes+other.votes) * math.Pi / 180
				// The wrapper must reach the partner line; if it stops well
				// short, the partner is something else (clutter).
				sep := math.Abs(rb - ra)
				if ext := wrapperExtent(sm, theta, ra, side, sep); ext < 0.8*sep {
					cs = append(cs, cand{ra + side*ext, 0.8, nil})
				} else {
					cs = append(cs, cand{rb, 1, other})
				}
			} else {
				ext := wrapperExtent(sm, theta, ra, side, 0.9*float64(w))
				cs = append(cs, cand{ra + side*ext, 0.8, nil})
				// The other silhouette may be out of frame (a cropped photo)
				// with the wrapper's far side, lit or shaded, not matching
				// its side by the line: also try the cigar reaching the frame,
				// for a long line (a silhouette crosses the whole frame).
				far := 0.0
				c, s := math.Cos(theta), math.Sin(theta)
				for _, p := range [][2]float64{{0, 0}, {float64(w), 0}, {0, float64(h)}, {float64(w), float64(h)}} {
					far = math.Max(far, side*(p[0]*c+p[1]*s-ra))
				}
				if far > 1.3*ext && float64(a.votes) >= 0.3*float64(h) {
					cs = append(cs, cand{ra + side*math.Min(far, 0.9*float64(w)), 0.7, nil})
				}
			}
			for _, cd := range cs {
				rb, other := cd.rb, cd.other
				bx, q := bandAlong(sm, theta, math.Min(ra, rb), math.Max(ra, rb))
				// Silhouettes cross the whole frame: between hypotheses that
				// find the same band, the longer line is the cigar's edge
				// rather than clutter beside it or an end panel's edge.
				votes := float64(a.votes)
				if other != nil {
					votes = (votes + float64(other.votes)) / 2
				}
				q *= cd.penalty * sizePrior(bx.halfW, w, h) * math.Pow(votes/float64(peaks[0].votes), 0.3)
				if debugCigar != nil {
					debugCigar(a.t-40, a.r-diag, int(a.votes), side, other != nil, bx, q)
				}
				if q <= 0 {
					continue
				}
				// Refine the width where the band meets the lines (perspective).
				if other != nil {
					var us [2]float64
					c, s := math.Cos(bx.angle), math.Sin(bx.angle)
					for k, p := range []peak{a, *other} {
						ti := float64(p.t-40) * math.Pi / 180
						nx, ny := math.Cos(ti), math.Sin(ti)
						us[k] = (float64(p.r-diag) - (bx.cx*nx + bx.cy*ny)) / (c*nx + s*ny)
					}
					if us[0] > us[1] {
						us[0], us[1] = us[1], us[0]
					}
					if us[1]-us[0] > bx.halfW {
						bx.cx, bx.cy = bx.point((us[0]+us[1])/2, 0)
						bx.halfW = (us[1] - us[0]) / 2
					}
				}
				hyps = append(hyps, hyp{bx, q})
			}
		}
	}
	// The band's own edges, stripes and text run across the cigar: among
	// the best hypotheses, prefer those whose band agrees in angle with
	// the silhouette (a clutter edge next to a tilted cigar does not).
	sort.SliceStable(hyps, func(i, j int) bool { return hyps[i].q > hyps[j].q })
	best, bestAng, bestQ, bestR := box{}, 0.0, 0.0, 0.0
	for i := range min(len(hyps), 5) {
		hb := hyps[i]
		ang := refineAngle(sm, hb.b)
		d := (ang - hb.b.angle) / (10 * math.Pi / 180)
		if r := hb.q * math.Exp(-d*d); r > bestR {
			best, bestAng, bestQ, bestR = hb.b, ang, hb.q, r
		}
	}
	if bestQ > 0 {
		best = remeasure(sm, best, bestAng)
	}
	best.conf = bestQ
	return best, bestQ
}

// remeasureSmear is the least smear (over the band's half-height) that
// remeasure measures the rows again for.
var remeasureSmear = 0.1

// remeasure turns the band b to its refined axis angle and measures its
// rows again across that axis: under perspective the band's edges are not
// square to the silhouettes, and rows taken across the silhouettes' axis
// smear them (a band found too tall, or off centre).
//
// A small turn smears little: then the rows stay as they were (a band whose
// ground is the wrapper's colour may be found again as only part of itself).
func remeasure(sm *raster, b box, angle float64) box {
	c, s := math.Cos(angle), math.Sin(angle)
	mid := b.cx*c + b.cy*s
	out := b
	out.angle = angle
	if smear := b.halfW * math.Abs(math.Tan(angle-b.angle)); smear < remeasureSmear*b.halfH {
		return out
	}
	nb, q := bandAlong(sm, angle, mid-b.halfW, mid+b.halfW)
	if q <= 0 {
		return out
	}
	// Only the same band, found again: not another run along the cigar.
	t0, t1 := -b.cx*s+b.cy*c, -nb.cx*s+nb.cy*c
	if math.Abs(t1-t0) >= b.halfH {
		return out
	}
	out.cx, out.cy = mid*c-t1*s, mid*s+t1*c
	out.halfH = nb.halfH
	return out
}

// refineAngle re-estimates the band's axis from its own long edges,
// stripes and text baselines: the angle within ±10° of the box's whose
// projection profile of across-axis gradient is sharpest.
func refineAngle(sm *raster, b box) float64 {
	w, h := sm.w, sm.h
	type px struct{ x, y, gx, gy float64 }
	var pts []px
	c, s := math.Cos(b.angle), math.Sin(b.angle)
	r := math.Hypot(b.halfW, b.halfH*1.5)
	for y := max(1, int(b.cy-r)); y < min(h-1, int(b.cy+r)+1); y++ {
		for x := max(1, int(b.cx-r)); x < min(w-1, int(b.cx+r)+1); x++ {
			dx, dy := float64(x)+0.5-b.cx, float64(y)+0.5-b.cy
			u, v := dx*c+dy*s, -dx*s+dy*c
			if math.Abs(u) > b.halfW*0.9 || math.Abs(v) > b.halfH*1.5 {
				continue
			}
			gx := float64(sm.p[(y*w+x+1)*3] - sm.p[(y*w+x-1)*3])
			gy := float64(sm.p[((y+1)*w+x)*3] - sm.p[((y-1)*w+x)*3])
			if gx*gx+gy*gy < 25 {
				continue
			}
			pts = append(pts, px{dx, dy, gx, gy})
		}
	}
	if len(pts) < 20 {
		return b.angle
	}
	nb := int(3*b.halfH*1.5) + 4
	bestA, bestS := b.angle, -1.0
	for d := -10; d <= 10; d++ {
		a := b.angle + float64(d)*math.Pi/180
		ca, sa := math.Cos(a), math.Sin(a)
		prof := make([]float64, nb)
		for _, p := range pts {
			v := -p.x*sa + p.y*ca
			k := int(v + float64(nb)/2)
			if k < 0 || k >= nb {
				continue
			}
			prof[k] += math.Abs(-p.gx*sa + p.gy*ca)
		}
		var sc float64
		for _, v := range prof {
			sc += v * v
		}
		if sc > bestS {
			bestS, bestA = sc, a
		}
	}
	return bestA
}

// bandAlong looks for the band along a cigar whose cross-section is the
// strip r0 <= x*cos(theta) + y*sin(theta) <= r1: the run of positions along
// the cigar where the cross-section's colour or texture departs from the
// wrapper's (the median).
func bandAlong(sm *raster, theta, r0, r1 float64) (box, float64) {
	w, h := sm.w, sm.h
	c, s := math.Cos(theta), math.Sin(theta)
	mid, half := (r0+r1)/2, (r1-r0)/2
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
		if cnt >= 10 {
			valid[i] = true
			rowCol[i] = [3]float64{sum[0] / float64(cnt), sum[1] / float64(cnt), sum[2] / float64(cnt)}
			rowTex[i] = tex / float64(cnt)
		}
	}
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
	med := func(v []float64) float64 { return nth(v, len(v)/2) }
	wrap := [3]float64{med(ls), med(as), med(bs)}
	texMed := med(ts)
	// The wrapper's colour drifts along the cigar (light gradients): compare
	// each row with a running median of the rows around it.
	win := max(20, int(1.5*half))
	local := make([][3]float64, nT)
	buf := make([][]float64, 3)
	for i := range nT {
		if !valid[i] {
			continue
		}
		for k := range buf {
			buf[k] = buf[k][:0]
		}
		for j := max(0, i-win); j < min(nT, i+win+1); j += 4 {
			if valid[j] {
				for k := range 3 {
					buf[k] = append(buf[k], rowCol[j][k])
				}
			}
		}
		local[i] = [3]float64{med(buf[0]), med(buf[1]), med(buf[2])}
	}
	diff := make([]float64, nT)
	band := make([]bool, nT)
	quiet := 0
	for i := range nT {
		if !valid[i] {
			continue
		}
		tex := math.Max(0, rowTex[i]-texMed-1.5) / 2
		d := deltaE76(rowCol[i], wrap)/10 + tex
		diff[i] = d
		band[i] = d > 1
		if deltaE76(rowCol[i], local[i])/10+tex < 0.6 {
			quiet++
		}
	}
	for i := 1; i < nT-1; i++ {
		if !band[i] && valid[i] {
			l, r := false, false
			for k := max(0, i-3); k < i; k++ {
				l = l || band[k]
			}
			for k := i + 1; k < min(nT, i+4); k++ {
				r = r || band[k]
			}
			if l && r {
				band[i] = true
			}
		}
	}
	// A band whose ground is the wrapper's colour stands out by its
	// borders only: also try each matching pair of runs as one band.
	rs := runs(band)
	rs = append(rs, pairedRuns(rs, rowCol, half)...)
	bestMass, b0, b1 := 0.0, 0, 0
	for _, r := range rs {
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
	bx := box{cx: mid*c - tc*s, cy: mid*s + tc*c, angle: theta, halfW: half, halfH: float64(b1-b0) / 2}
	// Coverage: a band spans the cigar's whole width; clutter rarely does.
	// The fraction of samples across the strip, in the band's rows, that
	// are not wrapper-coloured.
	var covN, covIn int
	for i := b0; i < b1; i++ {
		t := tMin + float64(i) + 0.5
		for k := range samples {
			q := mid + half*0.85*(2*(float64(k)+0.5)/samples-1)
			x, y := q*c-t*s, q*s+t*c
			if x < 0 || y < 0 || x >= float64(w) || y >= float64(h) {
				continue
			}
			covN++
			if labDist(sm.bilinear(x, y), wrap) > 12 {
				covIn++
			}
		}
	}
	coverage := float64(covIn) / math.Max(1, float64(covN))
	quietFrac := float64(quiet) / float64(len(ls))
	contrast := math.Min(1, bestMass/float64(b1-b0)/2)
	aspect := bx.halfW / bx.halfH
	shape := 1.0
	if aspect < 1.5 || aspect > 9 {
		shape = 0.3
	}
	return bx, quietFrac * contrast * shape * wrapperPrior(wrap) * coverage
}

// wrapperPrior is 1 for the browns cigar wrappers come in (claro to oscuro,
// under a fair range of lighting), less for other colours.
func wrapperPrior(c [3]float64) float64 {
	L, a, b := c[0], c[1], c[2]
	hue := math.Atan2(b, a) * 180 / math.Pi
	chroma := math.Hypot(a, b)
	switch {
	case L > 8 && L < 80 && hue > 20 && hue < 95 && chroma > 4 && chroma < 50:
		return 1
	case L > 5 && L < 85 && chroma < 8: // dark or washed out: possible
		return 0.7
	default:
		return 0.4
	}
}

// sizePrior favours wide cigars: a photo taken to identify a band shows
// the cigar across a good part of the frame (even with one end cut off),
// while narrow strips between clutter edges are common.
func sizePrior(halfW float64, w, h int) float64 {
	f := math.Min(1, halfW/(0.2*float64(max(w, h))))
	return f * f
}

// debugCigar, when set (tests), sees every hypothesis.
var debugCigar func(theta, rho, votes int, side float64, paired bool, b box, q float64)

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// wrapperExtent estimates how far the cigar reaches from one silhouette line
// (x*cos(theta) + y*sin(theta) = r, cigar on the given side) when the other
// silhouette was not found: the wrapper's colour (median near the line)
// holds along most of the cigar's length until the background begins. It
// returns a distance in pixels, at most maxD.
func wrapperExtent(sm *raster, theta, r, side, maxD float64) float64 {
	w, h := sm.w, sm.h
	c, s := math.Cos(theta), math.Sin(theta)
	tMin, tMax := math.Inf(1), math.Inf(-1)
	for _, p := range [][2]float64{{0, 0}, {float64(w), 0}, {0, float64(h)}, {float64(w), float64(h)}} {
		t := -p[0]*s + p[1]*c
		tMin, tMax = math.Min(tMin, t), math.Max(tMax, t)
	}
	const steps = 40
	const tStep = 3.0
	at := func(q, t float64) ([3]float64, bool) {
		x, y := q*c-t*s, q*s+t*c
		if x < 0 || y < 0 || x >= float64(w) || y >= float64(h) {
			return [3]float64{}, false
		}
		return sm.bilinear(x, y), true
	}
	// Wrapper colour: median near the line.
	var ls, as, bs []float64
	for k := 1; k <= 4; k++ {
		q := r + side*float64(k)*maxD/steps
		for t := tMin; t < tMax; t += tStep {
			if p, ok := at(q, t); ok {
				ls, as, bs = append(ls, p[0]), append(as, p[1]), append(bs, p[2])
			}
		}
	}
	if len(ls) < 10 {
		return maxD
	}
	med := func(v []float64) float64 { return nth(v, len(v)/2) }
	wrap := [3]float64{med(ls), med(as), med(bs)}
	low := 0
	for k := 1; k <= steps; k++ {
		q := r + side*float64(k)*maxD/steps
		n, in := 0, 0
		for t := tMin; t < tMax; t += tStep {
			if p, ok := at(q, t); ok {
				n++
				if labDist(p, wrap) < 18 {
					in++
				}
			}
		}
		if n == 0 {
			return float64(k) * maxD / steps // the frame's edge
		}
		if float64(in) < 0.35*float64(n) {
			low++
			if low == 3 {
				return float64(k-3) * maxD / steps
			}
		} else {
			low = 0
		}
	}
	return maxD
}

// pairGap and pairColour bound pairedRuns: a band's ground is rarely more
// than three times as high as a border, and a band's two borders are
// printed alike.
const (
	pairGap    = 3.0
	pairColour = 12.0
)

// pairedRuns joins each two neighbouring runs (rows [start, end) along the
// cigar) that look like a band's top and bottom borders: lengths within
// 1.6x of each other, mean colours (rowCol, Lab) within pairColour (ΔE),
// apart by at most pairGap times the longer, and together no longer than a
// band can be (1.6 half-widths of the cigar). The runs themselves are left
// as they are.
func pairedRuns(rs [][2]int, rowCol [][3]float64, half float64) [][2]int {
	mean := func(r [2]int) [3]float64 {
		var m [3]float64
		for i := r[0]; i < r[1]; i++ {
			for k := range 3 {
				m[k] += rowCol[i][k]
			}
		}
		n := float64(r[1] - r[0])
		return [3]float64{m[0] / n, m[1] / n, m[2] / n}
	}
	var out [][2]int
	for i := 0; i+1 < len(rs); i++ {
		a, b := rs[i], rs[i+1]
		la, lb := float64(a[1]-a[0]), float64(b[1]-b[0])
		if la < 2 || lb < 2 || math.Max(la, lb) > 1.6*math.Min(la, lb) {
			continue
		}
		gap := float64(b[0] - a[1])
		if gap > pairGap*math.Max(la, lb) || float64(b[1]-a[0]) > 1.6*half {
			continue
		}
		if deltaE76(mean(a), mean(b)) > pairColour {
			continue
		}
		out = append(out, [2]int{a[0], b[1]})
	}
	return out
}
