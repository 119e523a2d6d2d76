package fingerprint

import (
	"math"
	"strings"
)

// The lines of one brand often share a band's design (ground, borders,
// medallion, the brand's name) and differ only where the line's own name and
// marks are: a ribbon, a lower panel, a colour accent. Compared whole, two
// such bands differ by little more than a photo's noise, so the parts that
// tell the lines apart are weighed separately: the line's words in the OCR
// text (lineWords), and the regions of the band where the brand's evidence
// differs from line to line (LineMask).

// labelWords splits an evidence label into the brand's words and the line's
// own: the words of the line's name that are not the brand's ("PADRON" in
// "Padrón" / "Padrón 1964 Anniversary" is the brand's).
func labelWords(l *Label) (brand, line []string) {
	brand = strings.Fields(normText(l.Brand))
	isBrand := map[string]bool{}
	for _, w := range brand {
		isBrand[w] = true
	}
	for _, w := range strings.Fields(normText(l.Line)) {
		if !isBrand[w] {
			line = append(line, w)
		}
	}
	return brand, line
}

// ocrLineWords are the words an evidence's own OCR read that may name its
// line: long enough not to be noise among decorations, and not the brand's.
func ocrLineWords(text string, brand []string) []string {
	var out []string
	for _, w := range strings.Fields(normText(text)) {
		if len(w) < 4 {
			continue
		}
		num, den := wordsFound(brand, w, minWordFound)
		if den > 0 && num/den >= 0.75 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// lineTextWeight is how much more the line's words count than the brand's in
// the label's text score: the brand's name is on every line of the brand
// and tells them apart not at all.
const lineTextWeight = 3

// labelTextScores scores a query's OCR text q (normText'd, spaces removed)
// against a labelled evidence: the text score, with the line's words
// weighing lineTextWeight times the brand's (a brand read scores each of
// its lines alike), and how much of the line's own words were read (lineOK
// false when the label has no words of its own), which is what tells the
// brand's lines apart.
func labelTextScores(q string, e *Fingerprint) (text, line float64, lineOK bool) {
	brandW, lineW := labelWords(e.Label)
	bNum, bDen := wordsFound(brandW, q, minWordFound)
	brand := 0.0
	if bDen > 0 {
		brand = bNum / bDen
	}
	if len(lineW) > 0 {
		if lNum, lDen := wordsFound(lineW, q, minWordFound); lDen > 0 {
			line, lineOK = lNum/lDen, true
		}
	}
	// The band's own printing of its line (read from the evidence) may say
	// it otherwise than the catalog's name: the better reading counts.
	if ow := ocrLineWords(e.Typography.Text, brandW); len(ow) > 0 {
		if lNum, lDen := wordsFound(ow, q, minWordFound); lDen > 0 {
			line, lineOK = math.Max(line, lNum/lDen), true
		}
	}
	switch {
	case lineOK && bDen > 0:
		return (brand + lineTextWeight*line) / (1 + lineTextWeight), line, true
	case lineOK:
		return line, line, true
	}
	return brand, 0, false
}

// LineMask weighs a band's measures by how much the lines of one brand
// differ there: where their evidence is alike (the shared ground, borders,
// medallion and brand name) a photo's difference from one line or another
// is noise; where it differs (the line's name, ribbon, accent) it tells them
// apart. Two measures are weighed: the index vector (cells, profiles, edges)
// and the colour layout (16x4 cells, finer along the band; each channel's
// mean taken out, which a photo's light and cast move). It is learned from
// the brand's evidence, none of it named by hand.
type LineMask struct {
	vec, grid maskBlock
}

// maskBlock is one measure's weights: the variance between the brand's
// lines in each dimension (summing to 1), the brand's mean design, and the
// mean weighted distance between two of its evidence items (distances are
// in its units).
type maskBlock struct {
	weight, centre []float64
	scale          float64
}

func newMaskBlock(items [][]float64) (maskBlock, bool) {
	dim, n := len(items[0]), float64(len(items))
	b := maskBlock{weight: make([]float64, dim), centre: make([]float64, dim)}
	for _, v := range items {
		for d, x := range v {
			b.centre[d] += x / n
		}
	}
	var total float64
	for d := range dim {
		for _, v := range items {
			dx := v[d] - b.centre[d]
			b.weight[d] += dx * dx / n
		}
		total += b.weight[d]
	}
	if total == 0 {
		return b, false // identical designs: nothing tells them apart
	}
	for d := range b.weight {
		b.weight[d] /= total
		// The mean distance between two items is twice the weighted variance.
		b.scale += 2 * b.weight[d] * b.weight[d] * total
	}
	return b, true
}

func (b *maskBlock) distance(q, e []float64) float64 {
	var d float64
	for k := range b.weight {
		x := q[k] - e[k]
		d += b.weight[k] * x * x
	}
	return d / b.scale
}

// NewLineMask learns the mask of one brand's evidence (one or more items per
// line, of two lines or more); nil when there is not enough to learn from.
func NewLineMask(evidence []*Fingerprint) *LineMask {
	var vs, gs [][]float64
	for _, e := range evidence {
		v, g, ok := lineMeasures(e)
		if ok {
			vs, gs = append(vs, v[:]), append(gs, g)
		}
	}
	if len(vs) < 2 {
		return nil
	}
	m := &LineMask{}
	var ok1, ok2 bool
	m.vec, ok1 = newMaskBlock(vs)
	m.grid, ok2 = newMaskBlock(gs)
	if !ok1 || !ok2 {
		return nil
	}
	return m
}

// lineMeasures are an evidence's measures as the mask weighs them.
func lineMeasures(fp *Fingerprint) ([]float64, []float64, bool) {
	if len(fp.Vector) != VectorLen {
		return nil, nil, false
	}
	cells, ok := parseColourLayout(fp.Hashes.ColorLayout)
	if !ok {
		return nil, nil, false
	}
	v := make([]float64, VectorLen)
	for i, x := range fp.Vector {
		v[i] = float64(x)
	}
	return v, gridMeasures(cells), true
}

// gridMeasures are colour layout cells with each channel's mean taken out.
func gridMeasures(cells [][3]float64) []float64 {
	var mean [3]float64
	for _, c := range cells {
		for k := range 3 {
			mean[k] += c[k] / float64(len(cells))
		}
	}
	out := make([]float64, 0, len(cells)*3)
	for _, c := range cells {
		out = append(out, c[0]-mean[0], c[1]-mean[1], c[2]-mean[2])
	}
	return out
}

// Distances are how far a query's band lies from each of the brand's
// evidence items where the brand's lines differ, in units of the distance
// between two lines (0: the same; about 1: as far as another line), the
// index vector's and the colour layout's averaged. The query is first laid
// over the brand's common design (the alignment that fits its mean best),
// so that every line is compared at the same alignment: a line may not win
// by shifting its name under the photo's.
func (m *LineMask) Distances(q *Fingerprint, evidence []*Fingerprint) []float64 {
	out := make([]float64, len(evidence))
	cells, ok := parseColourLayout(q.Hashes.ColorLayout)
	if len(q.Vector) != VectorLen || !ok {
		for i := range out {
			out[i] = math.Inf(1)
		}
		return out
	}
	qv, al := m.align(q.Vector)
	qg := gridMeasures(alignCells(cells, &alignmentColumns[al]))
	for i, e := range evidence {
		ev, eg, ok := lineMeasures(e)
		if !ok {
			out[i] = math.Inf(1)
			continue
		}
		out[i] = (m.vec.distance(qv[:], ev) + m.grid.distance(qg, eg)) / 2
	}
	return out
}

// alignCells resamples a colour layout's columns under an alignment.
func alignCells(cells [][3]float64, cols *alignedColumns) [][3]float64 {
	out := make([][3]float64, len(cells))
	for xe, c := range cols.of16 {
		for y := range colourLayoutH {
			a, b := cells[y*colourLayoutW+c.i0], cells[y*colourLayoutW+c.i1]
			out[y*colourLayoutW+xe] = [3]float64{a[0] + (b[0]-a[0])*c.f, a[1] + (b[1]-a[1])*c.f, a[2] + (b[2]-a[2])*c.f}
		}
	}
	return out
}

// align returns the query's vector under the alignment (and its index in
// alignments) that brings it closest (cosine) to the brand's mean design,
// its penalty taken into account as the full comparison does.
func (m *LineMask) align(v []float32) ([VectorLen]float64, int) {
	var qv, best, buf [VectorLen]float64
	for i, x := range v {
		qv[i] = float64(x)
	}
	var nc float64
	for _, x := range m.vec.centre {
		nc += x * x
	}
	cos := func(a *[VectorLen]float64) float64 {
		var d, na float64
		for i := range a {
			d += a[i] * m.vec.centre[i]
			na += a[i] * a[i]
		}
		if na == 0 || nc == 0 {
			return 0
		}
		return d / math.Sqrt(na*nc)
	}
	best, bestAl := qv, 0
	bestScore := cos(&qv)
	for i, al := range alignments[1:] {
		penalty := al.penalty()
		if penalty <= bestScore {
			continue
		}
		buf = qv
		alignVector(buf[:], qv[:], &alignmentColumns[i+1])
		if s := penalty * cos(&buf); s > bestScore {
			best, bestAl, bestScore = buf, i+1, s
		}
	}
	// The aligned vector is renormalised, as the evidence's are.
	var n float64
	for _, x := range best {
		n += x * x
	}
	if n > 0 {
		n = math.Sqrt(n)
		for i := range best {
			best[i] /= n
		}
	}
	return best, bestAl
}
