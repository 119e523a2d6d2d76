package fingerprint

import (
	"math"
	"strings"
	"unicode"
)

// Scores are per-evidence-kind similarities of a query to an evidence
// fingerprint, each in [0,1], and their combination.
type Scores struct {
	// Total is the weighted combination (what Similarity returns).
	Total float64 `json:"total"`
	// Vector is the cosine of the index vectors (clamped at 0).
	Vector float64 `json:"vector"`
	// Color compares the dominant colours (share-weighted nearest ΔE).
	Color float64 `json:"color"`
	// Layout compares the colour layouts (corrected for the photo's white
	// balance and brightness, aligned along the band), stripes, medallion
	// and text lines.
	Layout float64 `json:"layout"`
	// Hash compares the dHash and pHash (Hamming).
	Hash float64 `json:"hash"`
	// Text is the fuzzy match of the query's OCR text to the evidence's text
	// and label; TextUsed says whether it counted (the query had text and
	// the evidence something to match it to).
	Text     float64 `json:"text"`
	TextUsed bool    `json:"text_used"`
	// LineText is how much of the evidence's line's own words (its label's
	// line name without the brand's words) the query's OCR read, 0..1;
	// LineWords says whether there were such words and text to find them
	// in. Text that names only the brand confirms the brand, never a line:
	// this is what tells the brand's lines apart. Not part of the API's
	// scores.
	LineText  float64 `json:"-"`
	LineWords bool    `json:"-"`
	// Keypoints is what the keypoints' Inliers are worth (KeypointScore):
	// how many of the photo's keypoints one placement of the evidence
	// explains. Recognition fills both (views averaged); Compare does not,
	// and Total leaves them out.
	Keypoints float64 `json:"keypoints"`
	Inliers   float64 `json:"inliers"`
}

// Weights of the evidence kinds in Scores.Total. Text, when used, adds its
// weight; the total is divided by the sum of the weights used.
var (
	weightVector = 0.65
	weightColor  = 0.05
	weightLayout = 0.25
	weightHash   = 0.05
	weightText   = 0.15
)

// The decision rule: a query is matched to its best line when that line's
// Total is at least MatchThreshold and leads the second-best line (another
// line, not another vitola of the same line) by at least MatchMargin.
// Calibrated on the synthetic benchmark (TestAccuracy: 224 lines, 8 mild
// and 8 strong photos each) so that wrong matches stay under 2% of single
// photos at both levels, with and without OCR text.
var (
	MatchThreshold = 0.62
	MatchMargin    = 0.05
)

// Matched applies the decision rule to the best and second-best lines'
// totals.
func Matched(best, second float64) bool {
	return best >= MatchThreshold && best-second >= MatchMargin
}

// CompareMany scores several photos of one band against an evidence
// fingerprint: every score is the mean over the queries.
func CompareMany(queries []*Fingerprint, evidence *Fingerprint) Scores {
	var s Scores
	if len(queries) == 0 {
		return s
	}
	n := float64(len(queries))
	for _, q := range queries {
		c := Compare(q, evidence)
		s.Total += c.Total / n
		s.Vector += c.Vector / n
		s.Color += c.Color / n
		s.Layout += c.Layout / n
		s.Hash += c.Hash / n
		s.Text += c.Text / n
		s.TextUsed = s.TextUsed || c.TextUsed
		s.LineText += c.LineText / n
		s.LineWords = s.LineWords || c.LineWords
	}
	return s
}

// Similarity is Compare(query, evidence).Total, in [0,1].
func Similarity(query, evidence *Fingerprint) float64 { return Compare(query, evidence).Total }

// Compare scores a query fingerprint against an evidence fingerprint.
func Compare(query, evidence *Fingerprint) Scores {
	var s Scores
	s.Vector = vectorSimilarity(query.Vector, evidence.Vector)
	s.Color = colorSimilarity(query.Colors, evidence.Colors)
	s.Layout = layoutSimilarity(query, evidence)
	d, ok1 := hashSimilarity(query.Hashes.DHash, evidence.Hashes.DHash)
	p, ok2 := hashSimilarity(query.Hashes.PHash, evidence.Hashes.PHash)
	if ok1 && ok2 {
		s.Hash = (d + p) / 2
	}
	num := weightVector*s.Vector + weightColor*s.Color + weightLayout*s.Layout + weightHash*s.Hash
	den := weightVector + weightColor + weightLayout + weightHash
	q := normText(query.Typography.Text)
	switch refs := evidenceTexts(evidence); {
	case q == "":
	case evidence.Label != nil:
		// The total keeps the whole label's score: weighing the line's words
		// above the brand's there lowered thorough identify's matches on
		// bandart (TestIdentifyAccuracy, strong: 5 of 8 against quick's 7);
		// the line's own words are weighed apart, in LineText.
		_, s.LineText, s.LineWords = labelTextScores(strings.ReplaceAll(q, " ", ""), evidence)
		s.Text, s.TextUsed = textSimilarity(q, append(refs, normText(evidence.Label.Brand+" "+evidence.Label.Line))), true
	case len(refs) > 0:
		s.Text, s.TextUsed = textSimilarity(q, refs), true
	}
	if s.TextUsed {
		num += weightText * s.Text
		den += weightText
	}
	s.Total = num / den
	return s
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

// labDist is ΔE with lightness weighted down (lighting changes it most).
func labDist(a, b [3]float64) float64 { return math.Sqrt(labDist2(a, b)) }

// labDist2 is labDist squared: the same order, without the root.
func labDist2(a, b [3]float64) float64 {
	dl, da, db := (a[0]-b[0])*0.5, a[1]-b[1], a[2]-b[2]
	return dl*dl + da*da + db*db
}

func colorSimilarity(q, e []Color) float64 {
	if len(q) == 0 || len(e) == 0 {
		return 0
	}
	side := func(x, y []Color) float64 {
		var s, tot float64
		for _, c := range x {
			best := math.Inf(1)
			for _, o := range y {
				best = math.Min(best, labDist([3]float64{c.L, c.A, c.B}, [3]float64{o.L, o.A, o.B}))
			}
			s += c.Share * math.Exp(-best/15)
			tot += c.Share
		}
		return s / math.Max(tot, 1e-9)
	}
	g := 0.0
	if q[0].Role == "ground" && e[0].Role == "ground" {
		g = math.Exp(-labDist([3]float64{q[0].L, q[0].A, q[0].B}, [3]float64{e[0].L, e[0].A, e[0].B}) / 15)
	}
	return 0.35*side(q, e) + 0.35*side(e, q) + 0.3*g
}

func layoutSimilarity(q, e *Fingerprint) float64 {
	a, ok1 := parseColourLayout(q.Hashes.ColorLayout)
	b, ok2 := parseColourLayout(e.Hashes.ColorLayout)
	grid := 0.0
	if ok1 && ok2 {
		grid = gridSimilarity(normL(castTo(a, b)), normL(b))
	}
	// Structure: stripes, medallion, text lines.
	st := 0.0
	ns, ne := len(q.Layout.Stripes), len(e.Layout.Stripes)
	st += 0.35 * math.Exp(-math.Abs(float64(ns-ne))/1.5)
	mq, me := q.Layout.Medallion, e.Layout.Medallion
	switch {
	case mq.Present && me.Present:
		st += 0.35 * math.Exp(-math.Abs(mq.X-me.X)/0.15)
	case !mq.Present && !me.Present:
		st += 0.25
	}
	lq, le := len(q.Typography.Lines), len(e.Typography.Lines)
	st += 0.3 * math.Exp(-math.Abs(float64(lq-le)))
	return 0.75*grid + 0.25*st
}

// castTo corrects the query's colour layout q for the photo's light: the
// per-channel gains that bring its cells closest to the evidence's e (least
// squares, in linear RGB), an overall brightness times a colour cast of at
// most about ±15% per channel of 8-bit sRGB, as a camera's white balance
// gets wrong. (A gain on 8-bit sRGB is about its 2.2nd power in linear RGB.)
func castTo(q, e [][3]float64) [][3]float64 {
	ql := make([][3]float64, len(q))
	var num, den [3]float64
	for i := range q {
		r, g, b := labToLinear(q[i][0], q[i][1], q[i][2])
		ql[i] = [3]float64{math.Max(0, r), math.Max(0, g), math.Max(0, b)}
		r, g, b = labToLinear(e[i][0], e[i][1], e[i][2])
		for c, v := range [3]float64{math.Max(0, r), math.Max(0, g), math.Max(0, b)} {
			num[c] += ql[i][c] * v
			den[c] += ql[i][c] * ql[i][c]
		}
	}
	var gain [3]float64
	for c := range 3 {
		gain[c] = 1
		if den[c] > 0 {
			gain[c] = clampF(num[c]/den[c], castGain[0], castGain[1])
		}
	}
	mean := math.Cbrt(gain[0] * gain[1] * gain[2])
	for c := range 3 {
		gain[c] = mean * clampF(gain[c]/mean, castRel[0], castRel[1])
	}
	out := make([][3]float64, len(q))
	for i, p := range ql {
		L, A, B := linearToLab(math.Min(1, p[0]*gain[0]), math.Min(1, p[1]*gain[1]), math.Min(1, p[2]*gain[2]))
		out[i] = [3]float64{L, A, B}
	}
	return out
}

// Bounds on castTo's gains in linear RGB: overall (a photo's brightness
// and contrast) and of each channel against their geometric mean (a white
// balance about ±13% off on 8-bit sRGB).
var castGain, castRel = [2]float64{0.3, 2.5}, [2]float64{0.75, 1.33}

// alignment lays a query's band over an evidence's: the evidence's column
// at t (-1..1 along the band) is the query's at t*k + shift. A design spans
// more or less of a thicker or thinner cigar, may be turned on it, and a
// located band may be a little too wide or off centre.
type alignment struct{ k, shift float64 }

// alignments are those tried, the identity first; shifts are fractions of
// the band's half-width.
var alignments = func() []alignment {
	var out []alignment
	for _, k := range [...]float64{1, 0.8, 0.9, 1.1} {
		for _, step := range [...]int{0, -1, 1, -2, 2, -3, 3, -4, 4} {
			out = append(out, alignment{k, float64(step) * 0.05})
		}
	}
	return out
}()

// penalty discounts a score found by moving: the further, the more.
func (a alignment) penalty() float64 { return 1 - 0.2*(math.Abs(a.shift)+math.Abs(a.k-1)) }

// column is where an evidence column xe of n samples the query's: between
// i0 and i1, f of the way; inside is false when that falls outside the
// query's columns (then i0 = i1 is the nearest).
func (a alignment) column(xe, n int) (i0, i1 int, f float64, inside bool) {
	tq := ((float64(xe)+0.5)/float64(n)*2-1)*a.k + a.shift
	fq := (tq+1)/2*float64(n) - 0.5
	inside = fq >= 0 && fq <= float64(n-1)
	fq = clampF(fq, 0, float64(n-1))
	i0 = int(fq)
	return i0, min(i0+1, n-1), fq - float64(i0), inside
}

// gridSimilarity compares two colour layouts, the query's q under each
// alignment; the best wins, discounted by its penalty.
func gridSimilarity(q, e [][3]float64) float64 {
	best := 0.0
	for i, al := range alignments {
		cols := &alignmentColumns[i]
		cnt := cols.inside16 * colourLayoutH
		penalty := al.penalty()
		if cnt < colourLayoutW*colourLayoutH*6/10 || penalty <= best {
			continue
		}
		// penalty*exp(-sum/cnt/14) beats best only while sum < limit: most
		// alignments stop early once the identity has set best.
		limit := math.Inf(1)
		if best > 0 {
			limit = float64(cnt) * 14 * math.Log(penalty/best)
		}
		var sum float64
		for xe, c := range cols.of16 {
			if !c.inside {
				continue
			}
			for y := range colourLayoutH {
				a, b := q[y*colourLayoutW+c.i0], q[y*colourLayoutW+c.i1]
				v := [3]float64{a[0] + (b[0]-a[0])*c.f, a[1] + (b[1]-a[1])*c.f, a[2] + (b[2]-a[2])*c.f}
				sum += labDist(v, e[y*colourLayoutW+xe])
			}
			if sum >= limit {
				break
			}
		}
		if sum < limit {
			best = math.Max(best, penalty*math.Exp(-sum/float64(cnt)/14))
		}
	}
	return best
}

// vectorSimilarity is the cosine of two index vectors (clamped at 0), the
// query's also under each alignment (its parts laid out along the band
// resampled: see alignVector); the best wins, discounted by its penalty.
func vectorSimilarity(q, e []float32) float64 {
	best := math.Max(0, cosine(q, e))
	if len(q) != VectorLen || len(e) != VectorLen {
		return best
	}
	// Only the parts along the band change with the alignment: the dot
	// product and norms of the rest are computed once.
	var ev, qv [VectorLen]float64
	var en, fixedDot, fixedNorm float64
	for i := range e {
		ev[i], qv[i] = float64(e[i]), float64(q[i])
		en += ev[i] * ev[i]
		if i >= vecCellsEnd && i < vecColumns {
			fixedDot += qv[i] * ev[i]
			fixedNorm += qv[i] * qv[i]
		}
	}
	if en == 0 {
		return best
	}
	var buf [VectorLen]float64
	for i, al := range alignments[1:] {
		penalty := al.penalty()
		if penalty <= best {
			continue
		}
		alignVector(buf[:], qv[:], &alignmentColumns[i+1])
		d, qn := fixedDot, fixedNorm
		for _, r := range [...][2]int{{vecCells, vecCellsEnd}, {vecColumns, VectorLen}} {
			for i := r[0]; i < r[1]; i++ {
				d += buf[i] * ev[i]
				qn += buf[i] * buf[i]
			}
		}
		if qn > 0 {
			best = math.Max(best, penalty*d/math.Sqrt(qn*en))
		}
	}
	return best
}

// alignVector writes into dst the parts of the index vector v laid out
// along the band (vectorOf's 8x4 cell layout, 32-column profile and 8x2
// edge cells), resampled under the alignment whose columns are cols;
// columns outside the query take its nearest. The other parts of dst are
// left as they are.
func alignVector(dst, v []float64, cols *alignedColumns) {
	for xe, c := range cols.of8 {
		for r := range 4 {
			for k := range 3 {
				a, b := v[vecCells+(r*8+c.i0)*3+k], v[vecCells+(r*8+c.i1)*3+k]
				dst[vecCells+(r*8+xe)*3+k] = a + (b-a)*c.f
			}
		}
		for r := range 2 {
			for k := range 4 {
				a, b := v[vecEdges+(r*8+c.i0)*4+k], v[vecEdges+(r*8+c.i1)*4+k]
				dst[vecEdges+(r*8+xe)*4+k] = a + (b-a)*c.f
			}
		}
	}
	for xe, c := range cols.of32 {
		a, b := v[vecColumns+c.i0], v[vecColumns+c.i1]
		dst[vecColumns+xe] = a + (b-a)*c.f
	}
}

// alignedColumns are an alignment's columns (see alignment.column), computed
// once, for the colour layout's 16 columns (inside16 of them inside the
// query) and the vector's 8- and 32-column parts.
type alignedColumns struct {
	of16     [colourLayoutW]columnOf
	inside16 int
	of8      [8]columnOf
	of32     [32]columnOf
}

type columnOf struct {
	i0, i1 int
	f      float64
	inside bool
}

var alignmentColumns = func() []alignedColumns {
	out := make([]alignedColumns, len(alignments))
	fill := func(dst []columnOf, al alignment) (inside int) {
		for xe := range dst {
			i0, i1, f, in := al.column(xe, len(dst))
			dst[xe] = columnOf{i0, i1, f, in}
			if in {
				inside++
			}
		}
		return inside
	}
	for i, al := range alignments {
		out[i].inside16 = fill(out[i].of16[:], al)
		fill(out[i].of8[:], al)
		fill(out[i].of32[:], al)
	}
	return out
}()

func normL(c [][3]float64) [][3]float64 {
	var m float64
	for _, v := range c {
		m += v[0]
	}
	m /= float64(len(c))
	out := make([][3]float64, len(c))
	for i, v := range c {
		out[i] = [3]float64{v[0] - m + 50, v[1], v[2]}
	}
	return out
}

// evidenceTexts are the strings a query's OCR text is matched against when
// the evidence has no label (labelTextScores otherwise): its own OCR text.
func evidenceTexts(e *Fingerprint) []string {
	var out []string
	if s := normText(e.Typography.Text); s != "" {
		out = append(out, s)
	}
	return out
}

var fold = map[rune]rune{
	'Á': 'A', 'À': 'A', 'Â': 'A', 'Ä': 'A', 'Ã': 'A', 'Å': 'A', 'É': 'E', 'È': 'E', 'Ê': 'E', 'Ë': 'E',
	'Í': 'I', 'Ì': 'I', 'Î': 'I', 'Ï': 'I', 'Ó': 'O', 'Ò': 'O', 'Ô': 'O', 'Ö': 'O', 'Õ': 'O', 'Ø': 'O',
	'Ú': 'U', 'Ù': 'U', 'Û': 'U', 'Ü': 'U', 'Ñ': 'N', 'Ç': 'C', 'Ý': 'Y',
}

// normText upper-cases, folds Latin accents, keeps letters and digits and
// collapses everything else to single spaces.
func normText(s string) string {
	var b strings.Builder
	space := true
	for _, r := range strings.ToUpper(s) {
		if f, ok := fold[r]; ok {
			r = f
		}
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			space = false
		} else if unicode.IsSpace(r) || unicode.IsPunct(r) || !space {
			if !space {
				b.WriteByte(' ')
				space = true
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// textSimilarity is how well the reference texts' words are found in the
// query text (see wordsFound); the best reference wins.
func textSimilarity(query string, refs []string) float64 {
	q := strings.ReplaceAll(query, " ", "")
	best := 0.0
	for _, ref := range refs {
		if num, den := wordsFound(strings.Fields(ref), q, 0); den > 0 {
			best = math.Max(best, num/den)
		}
	}
	return best
}

// minWordFound is the least similarity a word counts with when telling
// which line was read (labelTextScores): with more
// than 40% of its letters wrong, a word is found in any text about as well
// (the letters of "RESERVA" in "CASA QUETZAL": 29%), and such partial credit
// would rank one line above another by the letters of their names.
const minWordFound = 0.6

// wordsFound is how well words are found in the query text q (normText'd,
// spaces removed): for each word of two letters or more, 1 - (approximate-
// substring edit distance / word length), 0 under floor, weighted by word
// length (num of den).
func wordsFound(words []string, q string, floor float64) (num, den float64) {
	for _, word := range words {
		if len(word) < 2 {
			continue
		}
		d := substringDistance(word, q)
		sim := math.Max(0, 1-float64(d)/float64(len(word)))
		if len(word) <= 3 && d > 0 {
			sim = 0 // short words must match exactly
		}
		if sim < floor {
			sim = 0 // a few letters of it somewhere: any text has them
		}
		wt := float64(len(word))
		num += wt * sim
		den += wt
	}
	return num, den
}

// substringDistance is the least edit distance between pat and any
// substring of text (Sellers' algorithm).
func substringDistance(pat, text string) int {
	p, t := []byte(pat), []byte(text)
	prev := make([]int, len(p)+1)
	cur := make([]int, len(p)+1)
	for i := range prev {
		prev[i] = i
	}
	best := prev[len(p)]
	for j := 1; j <= len(t); j++ {
		cur[0] = 0
		for i := 1; i <= len(p); i++ {
			c := prev[i-1]
			if p[i-1] != t[j-1] {
				c++
			}
			cur[i] = min(c, prev[i]+1, cur[i-1]+1)
		}
		best = min(best, cur[len(p)])
		prev, cur = cur, prev
	}
	return best
}
