package fingerprint

import (
	"math"
	"sort"
)

// pal is the band's colour clustering.
type pal struct {
	centres [][3]float64
	shares  []float64
	roles   []string
	assign  []uint8 // per pixel of the normalised band
	ground  int
	text    int // -1 if none
}

func isGilt(c [3]float64) bool {
	chroma := math.Hypot(c[1], c[2])
	hue := math.Atan2(c[2], c[1]) * 180 / math.Pi
	return c[0] > 40 && c[0] < 90 && chroma > 28 && hue > 68 && hue < 105
}

// palette clusters the band's colours (k-means, k <= 5, deterministic
// histogram seeding) and gives each cluster a role.
func palette(lab *raster) *pal {
	n := lab.w * lab.h
	px := func(i int) [3]float64 {
		return [3]float64{float64(lab.p[i*3]), float64(lab.p[i*3+1]), float64(lab.p[i*3+2])}
	}
	// Seed from the most populated coarse bins, at least ΔE 15 apart.
	type bin struct {
		n   int
		sum [3]float64
		key int
	}
	var bins [8 * 256]bin
	for i := range n {
		c := px(i)
		k := int(clampF(c[0]/12.5, 0, 7))*256 + int(clampF((c[1]+128)/16, 0, 15))*16 + int(clampF((c[2]+128)/16, 0, 15))
		bn := &bins[k]
		bn.key = k
		bn.n++
		for j := range 3 {
			bn.sum[j] += c[j]
		}
	}
	list := make([]*bin, 0, 64)
	for k := range bins {
		if bins[k].n > 0 {
			list = append(list, &bins[k])
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].key < list[j].key
	})
	var centres [][3]float64
	for _, bn := range list {
		if len(centres) == 5 || bn.n < n/100 {
			break
		}
		c := [3]float64{bn.sum[0] / float64(bn.n), bn.sum[1] / float64(bn.n), bn.sum[2] / float64(bn.n)}
		far := true
		for _, o := range centres {
			if labDist(c, o) < 12 {
				far = false
			}
		}
		if far {
			centres = append(centres, c)
		}
	}
	if len(centres) == 0 {
		centres = [][3]float64{px(0)}
	}
	assign := make([]uint8, n)
	for range 6 {
		sums := make([][3]float64, len(centres))
		counts := make([]int, len(centres))
		for i := range n {
			c := px(i)
			best, bd := 0, math.Inf(1)
			for k, o := range centres {
				if d := labDist2(c, o); d < bd {
					best, bd = k, d
				}
			}
			assign[i] = uint8(best)
			counts[best]++
			for j := range 3 {
				sums[best][j] += c[j]
			}
		}
		for k := range centres {
			if counts[k] > 0 {
				centres[k] = [3]float64{sums[k][0] / float64(counts[k]), sums[k][1] / float64(counts[k]), sums[k][2] / float64(counts[k])}
			}
		}
	}
	p := &pal{centres: centres, assign: assign, shares: make([]float64, len(centres)), roles: make([]string, len(centres)), text: -1}
	for _, a := range assign {
		p.shares[a]++
	}
	for k := range p.shares {
		p.shares[k] /= float64(n)
	}
	for k := range centres {
		if p.shares[k] > p.shares[p.ground] {
			p.ground = k
		}
	}
	// Text: thin strokes (much edge for its area) contrasting with the
	// ground, outside stripe rows (rows mostly of one non-ground colour).
	w, h := lab.w, lab.h
	perim := make([]float64, len(centres))
	area := make([]float64, len(centres))
	for y := range h {
		rowCount := make([]int, len(centres))
		for x := range w {
			rowCount[assign[y*w+x]]++
		}
		stripe := false
		for k, c := range rowCount {
			if k != p.ground && c > w*7/10 {
				stripe = true
			}
		}
		if stripe {
			continue
		}
		for x := range w {
			a := assign[y*w+x]
			area[a]++
			if (x > 0 && assign[y*w+x-1] != a) || (x+1 < w && assign[y*w+x+1] != a) ||
				(y > 0 && assign[(y-1)*w+x] != a) || (y+1 < h && assign[(y+1)*w+x] != a) {
				perim[a]++
			}
		}
	}
	bestD := 0.0
	for k, c := range centres {
		if k == p.ground || p.shares[k] < 0.015 || area[k] == 0 {
			continue
		}
		contrast := math.Min(1, deltaE76(c, centres[p.ground])/40)
		thin := perim[k] / area[k]
		if d := contrast * thin; d > bestD {
			p.text, bestD = k, d
		}
	}
	for k, c := range centres {
		switch {
		case k == p.ground:
			p.roles[k] = "ground"
		case isGilt(c) && !isGilt(centres[p.ground]):
			p.roles[k] = "gilt"
		case k == p.text:
			p.roles[k] = "text"
		default:
			p.roles[k] = "accent"
		}
	}
	return p
}

func (p *pal) colors() []Color {
	idx := make([]int, len(p.centres))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.shares[idx[a]] > p.shares[idx[b]] })
	out := make([]Color, 0, len(idx))
	for _, k := range idx {
		c := p.centres[k]
		out = append(out, Color{Role: p.roles[k], L: r3(c[0]), A: r3(c[1]), B: r3(c[2]), Share: r3(p.shares[k])})
	}
	return out
}

// nonGround marks pixels far from the ground colour.
func (p *pal) nonGround(lab *raster) []bool {
	g := p.centres[p.ground]
	out := make([]bool, lab.w*lab.h)
	for i := range out {
		c := [3]float64{float64(lab.p[i*3]), float64(lab.p[i*3+1]), float64(lab.p[i*3+2])}
		out[i] = deltaE76(c, g) > 18
	}
	return out
}

// runs returns [start, end) runs of true.
func runs(v []bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(v); {
		if !v[i] {
			i++
			continue
		}
		j := i
		for j < len(v) && v[j] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// stripeRows marks rows that are mostly not ground across the band's middle.
func stripeRows(lab *raster, ng []bool) []bool {
	w, h := lab.w, lab.h
	rows := make([]bool, h)
	for y := range h {
		cnt := 0
		for x := w / 10; x < w-w/10; x++ {
			if ng[y*w+x] {
				cnt++
			}
		}
		rows[y] = float64(cnt) > 0.8*float64(w-2*(w/10))
	}
	return rows
}

func layoutOf(lab *raster, p *pal) Layout {
	w, h := lab.w, lab.h
	ng := p.nonGround(lab)
	rows := stripeRows(lab, ng)
	var lay Layout
	lay.Stripes = []Stripe{}
	thin := 0
	for _, r := range runs(rows) {
		if r[1]-r[0] > h/2 {
			continue // not a stripe: the band is mostly "not ground"
		}
		var s [3]float64
		cnt := 0
		for y := r[0]; y < r[1]; y++ {
			for x := w / 10; x < w-w/10; x++ {
				i := (y*w + x) * 3
				s[0] += float64(lab.p[i])
				s[1] += float64(lab.p[i+1])
				s[2] += float64(lab.p[i+2])
				cnt++
			}
		}
		cy := (float64(r[0]+r[1]) / 2) / float64(h)
		ht := float64(r[1]-r[0]) / float64(h)
		lay.Stripes = append(lay.Stripes, Stripe{Y: r3(cy), Height: r3(ht),
			L: r3(s[0] / float64(cnt)), A: r3(s[1] / float64(cnt)), B: r3(s[2] / float64(cnt))})
		if ht <= 0.06 && (cy < 0.2 || cy > 0.8) {
			thin++
		}
	}
	switch {
	case thin >= 4:
		lay.Border = "double"
	case thin >= 2:
		lay.Border = "single"
	default:
		lay.Border = "none"
	}
	// Column profile of non-ground in the middle rows.
	cols := make([]float64, w)
	for x := range w {
		cnt, tot := 0, 0
		for y := h / 5; y < h-h/5; y++ {
			if rows[y] {
				continue
			}
			tot++
			if ng[y*w+x] {
				cnt++
			}
		}
		if tot > 0 {
			cols[x] = float64(cnt) / float64(tot)
		}
	}
	// End panels: solid runs from either end.
	end := func(from, step int) int {
		n := 0
		for x := from; x >= 0 && x < w && cols[x] > 0.9; x += step {
			n++
		}
		return n
	}
	if l, r := end(0, 1), end(w-1, -1); min(l, r) > w/40 {
		lay.EndPanels = r3(float64(l+r) / 2 / float64(w))
	}
	dense := make([]bool, w)
	for x := range w {
		dense[x] = cols[x] > 0.6
	}
	bestMass := 0.0
	for _, r := range runs(dense) {
		wd := float64(r[1]-r[0]) / float64(w)
		if wd < 0.05 || wd > 0.3 || r[0] < w/40 || r[1] > w-w/40 {
			continue
		}
		mass := 0.0
		for x := r[0]; x < r[1]; x++ {
			mass += cols[x]
		}
		if mass > bestMass {
			bestMass = mass
			lay.Medallion = Medallion{Present: true, X: r3(float64(r[0]+r[1]) / 2 / float64(w)), Width: r3(wd), Shape: medallionShape(ng, w, h, r)}
		}
	}
	return lay
}

func medallionShape(ng []bool, w, h int, r [2]int) string {
	frac := func(y0, y1 int) float64 {
		cnt, tot := 0, 0
		for y := y0; y < y1; y++ {
			for x := r[0]; x < r[1]; x++ {
				tot++
				if ng[y*w+x] {
					cnt++
				}
			}
		}
		return float64(cnt) / float64(max(1, tot))
	}
	top, bot := frac(h/6, h/3), frac(2*h/3, 5*h/6)
	if top > bot+0.2 {
		return "shield"
	}
	return "round"
}

func typographyOf(lab *raster, p *pal) Typography {
	t := Typography{Lines: []TextLine{}}
	if p.text < 0 {
		return t
	}
	w, h := lab.w, lab.h
	ng := p.nonGround(lab)
	srows := stripeRows(lab, ng)
	mask := make([]bool, w*h)
	total := 0
	for y := range h {
		if srows[y] {
			continue
		}
		for x := range w {
			if int(p.assign[y*w+x]) == p.text {
				mask[y*w+x] = true
				total++
			}
		}
	}
	t.StrokeDensity = r3(float64(total) / float64(w*h))
	rowHas := make([]bool, h)
	for y := range h {
		cnt := 0
		for x := range w {
			if mask[y*w+x] {
				cnt++
			}
		}
		rowHas[y] = float64(cnt) > 0.02*float64(w)
	}
	for _, r := range runs(rowHas) {
		if r[1]-r[0] < 3 {
			continue
		}
		var xs []int
		for x := range w {
			for y := r[0]; y < r[1]; y++ {
				if mask[y*w+x] {
					xs = append(xs, x)
					break
				}
			}
		}
		if len(xs) == 0 {
			continue
		}
		x0, x1 := xs[len(xs)/50], xs[len(xs)-1-len(xs)/50]
		ht := float64(r[1]-r[0]) / float64(h)
		t.Lines = append(t.Lines, TextLine{Y: r3(float64(r[0]+r[1]) / 2 / float64(h)), Height: r3(ht),
			X0: r3(float64(x0) / float64(w)), X1: r3(float64(x1+1) / float64(w))})
		t.CharHeight = math.Max(t.CharHeight, r3(ht))
	}
	// Glyph-sized connected blobs.
	seen := make([]bool, w*h)
	stack := []int{}
	for i := range mask {
		if !mask[i] || seen[i] {
			continue
		}
		seen[i] = true
		stack = append(stack[:0], i)
		area, minY, maxY := 0, h, 0
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			area++
			y, x := j/w, j%w
			minY, maxY = min(minY, y), max(maxY, y)
			for _, nb := range [4][2]int{{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}} {
				if nb[0] < 0 || nb[1] < 0 || nb[0] >= w || nb[1] >= h {
					continue
				}
				k := nb[1]*w + nb[0]
				if mask[k] && !seen[k] {
					seen[k] = true
					stack = append(stack, k)
				}
			}
		}
		if hh := maxY - minY + 1; area >= 6 && hh >= 4 && hh < h*3/4 {
			t.Glyphs++
		}
	}
	return t
}

// VectorLen is the length of Fingerprint.Vector.
const VectorLen = 32*3 + 70 + 16*3 + 32 + 64

// The parts of the vector laid out along the band: the 8x4 cell layout (3
// values a cell, [vecCells, vecCellsEnd)), the 32-column profile (from
// vecColumns) and the 8x2 edge cells (4 orientations a cell, from vecEdges
// to the end). Between the cells and the columns are the colour histogram
// and the row profile, which do not depend on where along the band.
const (
	vecCells    = 0
	vecCellsEnd = vecCells + 32*3
	vecColumns  = vecCellsEnd + 70 + 16*3
	vecEdges    = vecColumns + 32
)

// vectorOf builds the index vector: blocks (colour layout with lighting-
// normalised L, colour histogram, row and column profiles, edge orientation
// grid) each L2-normalised and weighted, then the whole L2-normalised.
func vectorOf(lab *raster) []float32 {
	w, h := lab.w, lab.h
	n := w * h
	var meanL, varL float64
	for i := range n {
		meanL += float64(lab.p[i*3])
	}
	meanL /= float64(n)
	for i := range n {
		d := float64(lab.p[i*3]) - meanL
		varL += d * d
	}
	sdL := math.Sqrt(varL/float64(n)) + 8
	var blocks [][]float64
	// A: 8x4 cell layout.
	var a []float64
	for _, c := range cellMeans(lab, 8, 4) {
		a = append(a, (c[0]-meanL)/sdL, c[1]/40, c[2]/40)
	}
	blocks = append(blocks, a)
	// B: soft a*b* histogram 8x8 over [-64, 64] plus 6 L bins.
	hist := make([]float64, 70)
	for i := range n {
		L, A, B := float64(lab.p[i*3]), float64(lab.p[i*3+1]), float64(lab.p[i*3+2])
		fa, fb := clampF((A+64)/16-0.5, 0, 7), clampF((B+64)/16-0.5, 0, 7)
		ia, ib := int(fa), int(fb)
		da, db := fa-float64(ia), fb-float64(ib)
		ja, jb := min(ia+1, 7), min(ib+1, 7)
		hist[ia*8+ib] += (1 - da) * (1 - db)
		hist[ja*8+ib] += da * (1 - db)
		hist[ia*8+jb] += (1 - da) * db
		hist[ja*8+jb] += da * db
		hist[64+int(clampF(L/100*6, 0, 5))]++
	}
	for i := range hist {
		hist[i] = math.Sqrt(hist[i] / float64(n)) // Hellinger
	}
	blocks = append(blocks, hist)
	// C: row profile (16 x Lab) and column profile (32 x L).
	var c []float64
	for _, m := range cellMeans(lab, 1, 16) {
		c = append(c, (m[0]-meanL)/sdL, m[1]/40, m[2]/40)
	}
	for _, m := range cellMeans(lab, 32, 1) {
		c = append(c, (m[0]-meanL)/sdL)
	}
	blocks = append(blocks, c)
	// D: edge orientation energy, 8x2 cells x 4 orientations.
	d := make([]float64, 64)
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			gx := float64(lab.p[(y*w+x+1)*3] - lab.p[(y*w+x-1)*3])
			gy := float64(lab.p[((y+1)*w+x)*3] - lab.p[((y-1)*w+x)*3])
			m := math.Hypot(gx, gy)
			if m < 4 {
				continue
			}
			o := math.Atan2(gy, gx)
			if o < 0 {
				o += math.Pi
			}
			bin := int(o/(math.Pi/4)+0.5) % 4
			cell := (y*2/h)*8 + x*8/w
			d[cell*4+bin] += m
		}
	}
	for i := range d {
		d[i] = math.Sqrt(d[i])
	}
	blocks = append(blocks, d)

	weights := []float64{1.0, 0.8, 0.8, 0.7}
	out := make([]float64, 0, VectorLen)
	for k, b := range blocks {
		var s float64
		for _, v := range b {
			s += v * v
		}
		s = math.Sqrt(s)
		if s == 0 {
			s = 1
		}
		for _, v := range b {
			out = append(out, v/s*weights[k])
		}
	}
	var s float64
	for _, v := range out {
		s += v * v
	}
	s = math.Sqrt(s)
	if s == 0 {
		s = 1
	}
	vec := make([]float32, len(out))
	for i, v := range out {
		vec[i] = float32(round(v/s, 4))
	}
	return vec
}
