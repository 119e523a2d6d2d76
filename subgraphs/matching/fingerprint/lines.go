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
		num, den := wordsFound(brand, w)
		if den > 0 && num/den >= 0.75 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// lineTextWeight is how much more the line's words count than the brand's in
// the text score: the brand's name is on every line of the brand and tells
// them apart not at all.
const lineTextWeight = 3

// labelTextScores scores a query's OCR text q (normText'd, spaces removed)
// against a labelled evidence: the text score, with the line's words
// weighing lineTextWeight times the brand's, and how much of the line's own
// words were read (lineOK false when the label has no words of its own).
func labelTextScores(q string, e *Fingerprint) (text, line float64, lineOK bool) {
	brandW, lineW := labelWords(e.Label)
	bNum, bDen := wordsFound(brandW, q)
	brand := 0.0
	if bDen > 0 {
		brand = bNum / bDen
	}
	if len(lineW) > 0 {
		if lNum, lDen := wordsFound(lineW, q); lDen > 0 {
			line, lineOK = lNum/lDen, true
		}
	}
	// The band's own printing of its line (read from the evidence) may say
	// it otherwise than the catalog's name: the better reading counts.
	if ow := ocrLineWords(e.Typography.Text, brandW); len(ow) > 0 {
		if lNum, lDen := wordsFound(ow, q); lDen > 0 {
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

// LineMask weighs the index vector's parts by how much the lines of one
// brand differ there: where their evidence is alike (the shared ground,
// borders, medallion and brand name) a photo's difference from one line or
// another is noise; where it differs (the line's name, ribbon, accent) it
// tells them apart. It is learned from the brand's evidence, none of it
// named by hand.
type LineMask struct {
	weight [VectorLen]float64 // the variance between lines, summing to 1
	centre [VectorLen]float64 // the brand's mean design
	// scale is the mean weighted distance between two of the brand's
	// evidence items: distances are in its units.
	scale float64
}

// NewLineMask learns the mask of one brand's evidence (one or more items per
// line, of two lines or more); nil when there is not enough to learn from.
func NewLineMask(evidence []*Fingerprint) *LineMask {
	var vs [][]float32
	for _, e := range evidence {
		if len(e.Vector) == VectorLen {
			vs = append(vs, e.Vector)
		}
	}
	if len(vs) < 2 {
		return nil
	}
	m := &LineMask{}
	n := float64(len(vs))
	for _, v := range vs {
		for d, x := range v {
			m.centre[d] += float64(x) / n
		}
	}
	var total float64
	for d := range VectorLen {
		for _, v := range vs {
			dx := float64(v[d]) - m.centre[d]
			m.weight[d] += dx * dx / n
		}
		total += m.weight[d]
	}
	if total == 0 {
		return nil // identical designs: nothing tells them apart
	}
	for d := range m.weight {
		m.weight[d] /= total
	}
	// The mean distance between two items is twice the weighted variance.
	for d := range VectorLen {
		m.scale += 2 * m.weight[d] * m.weight[d] * total
	}
	return m
}

// Distances are how far a query's band lies from each of the brand's
// evidence items in the regions where the brand's lines differ, in units of
// the distance between two lines (0: the same; about 1: as far as another
// line). The query is first laid over the brand's common design (the
// alignment that fits the centre best), so that every line is compared at
// the same alignment: a line may not win by shifting its name under the
// photo's.
func (m *LineMask) Distances(q *Fingerprint, evidence []*Fingerprint) []float64 {
	out := make([]float64, len(evidence))
	if len(q.Vector) != VectorLen {
		for i := range out {
			out[i] = math.Inf(1)
		}
		return out
	}
	qv := m.align(q.Vector)
	for i, e := range evidence {
		if len(e.Vector) != VectorLen {
			out[i] = math.Inf(1)
			continue
		}
		var d float64
		for k := range VectorLen {
			x := qv[k] - float64(e.Vector[k])
			d += m.weight[k] * x * x
		}
		out[i] = d / m.scale
	}
	return out
}

// align returns the query's vector under the alignment that brings it
// closest (cosine) to the brand's centre, its penalty taken into account as
// the full comparison does.
func (m *LineMask) align(v []float32) [VectorLen]float64 {
	var qv, best, buf [VectorLen]float64
	for i, x := range v {
		qv[i] = float64(x)
	}
	cos := func(a *[VectorLen]float64) float64 {
		var d, na, nb float64
		for i := range a {
			d += a[i] * m.centre[i]
			na += a[i] * a[i]
			nb += m.centre[i] * m.centre[i]
		}
		if na == 0 || nb == 0 {
			return 0
		}
		return d / math.Sqrt(na*nb)
	}
	best = qv
	bestScore := cos(&qv)
	for i, al := range alignments[1:] {
		penalty := al.penalty()
		if penalty <= bestScore {
			continue
		}
		buf = qv
		alignVector(buf[:], qv[:], &alignmentColumns[i+1])
		if s := penalty * cos(&buf); s > bestScore {
			best, bestScore = buf, s
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
	return best
}
