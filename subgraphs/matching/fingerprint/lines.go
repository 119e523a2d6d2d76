package fingerprint

import (
	"math"
	"strings"
)

// The lines of one brand often share a band's design (ground, borders,
// medallion, the brand's name) and differ only where the line's own name and
// marks are: a ribbon, a lower panel, a colour accent. Compared whole, two
// such bands differ by little more than a photo's noise, so the parts that
// tell the lines apart are weighed separately: in the image, by the
// keypoints (keymatch.go: those on what the lines share match each line
// alike, those on the line's own name only its line), and in the OCR text,
// by the line's own words (labelTextScores).

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
		// One of the brand's words ("LENA" of "FINCA LENA"), not all of them.
		if len(likeAny([]string{w}, brand, 0.75)) > 0 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// likeAny keeps the words at least like (a share of letters) one of names
// (by wordsFound: its letters found in the name, or the name's in it).
func likeAny(words, names []string, like float64) []string {
	var out []string
	for _, w := range words {
		for _, n := range names {
			a, ad := wordsFound([]string{w}, n, 0)
			b, bd := wordsFound([]string{n}, w, 0)
			if (ad > 0 && a/ad >= like) || (bd > 0 && b/bd >= like) {
				out = append(out, w)
				break
			}
		}
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
	// it otherwise than the catalog's name: the better reading counts. Only
	// words like the name's own count: OCR reads noise among a band's
	// ornaments, and the same noise read on a photo of a sibling line
	// ("MACK" on both) would name this line.
	if ow := likeAny(ocrLineWords(e.Typography.Text, brandW), lineW, minWordFound); len(ow) > 0 {
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
