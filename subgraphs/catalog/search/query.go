package search

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// qword is a word of a query. An optional word adds points to the cigars it
// matches but costs nothing, and counts for nothing, where it does not: the
// words of a listing ("cigar", "box of 25", "the") and a size ("50x5").
type qword struct {
	text     string
	optional bool
	// prefix: the word matches as a prefix too, as the last word does ("Epi"
	// for "Epicure"), when it matched no word as written.
	prefix bool
	// loose: a word of four letters that matched nothing else matches with a
	// typo (looseMatches).
	loose bool
	// initial: a brand's initialism or initial that splitInitials read off
	// a word (initialMatches).
	initial bool
	// strong: the word is a word of the catalog as written (exactly, or a
	// derived word), not only with a typo or as a prefix. A word that is
	// not is weaker evidence (see Resolve).
	strong bool
}

// rawWords splits folded text into runs of letters and digits, as written.
func rawWords(s string) []string {
	return strings.FieldsFunc(catalog.Fold(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// numeral writes a number one way, so that "Siglo VI" and "Siglo 6", "No. II"
// and "No. 2" are one word: a Roman numeral of I, V and X (1 to 39) becomes
// Arabic. Other words are returned as they are.
func numeral(w string) string {
	if w == "" || len(w) > 6 || strings.Trim(w, "ivx") != "" {
		return w
	}
	val := map[byte]int{'i': 1, 'v': 5, 'x': 10}
	n := 0
	for i := 0; i < len(w); i++ {
		v := val[w[i]]
		if i+1 < len(w) && val[w[i+1]] > v {
			n -= v
		} else {
			n += v
		}
	}
	// Only the canonical spelling is a numeral ("iiii" or "vx" are not).
	if n < 1 || n > 39 || roman(n) != w {
		return w
	}
	return strconv.Itoa(n)
}

func roman(n int) string {
	var b strings.Builder
	for _, p := range []struct {
		v int
		s string
	}{{10, "x"}, {9, "ix"}, {5, "v"}, {4, "iv"}, {1, "i"}} {
		for n >= p.v {
			b.WriteString(p.s)
			n -= p.v
		}
	}
	return b.String()
}

// numberWords are the ways of writing "number" before a numeral ("#" is
// rewritten before splitting): they all become "no", the catalog's word.
var numberWords = map[string]bool{"no": true, "n": true, "nº": true, "nr": true, "nro": true, "num": true, "number": true, "numero": true}

// numberPrefix splits "no2" or "n°2" written as one word.
var numberPrefix = regexp.MustCompile(`^(no|n|nº|nr|num)([0-9]+)$`)

// Size notations: a ring gauge and a length ("50x5", "5 x 50", "5.5 by 52",
// "6 1/4\" x 52"), a ring alone ("52 ring", "55 rg"), a length alone ("5.5 in").
var (
	sizeNum   = `([0-9]+(?:[.,][0-9]+)?(?: [0-9]+/[0-9]+)?|[0-9]+/[0-9]+)`
	inches    = `(?:\s*(?:"|''|”|inch(?:es)?\b|in\b))?`
	sizePair  = regexp.MustCompile(`\b` + sizeNum + inches + `\s*(?:x|×|\*|by)\s*` + sizeNum + inches + `(?:\b|$)`)
	sizeRing  = regexp.MustCompile(`\b([0-9]{2})\s*(?:ring\s*gauge|ring|rg|gauge)\b`)
	sizeLen   = regexp.MustCompile(`\b` + sizeNum + `\s*(?:"|''|”|inch(?:es)?\b)`)
	hashNum   = regexp.MustCompile(`#\s*([0-9]+|[ivx]+\b)`)
	countWord = map[string]bool{"pack": true, "pk": true, "count": true, "ct": true, "box": true, "cigars": true, "cigar": true, "tubes": true}
)

// fillerWords say nothing about which cigar: words of listings and OCR, and
// articles. They are optional words of a resolve query.
var fillerWords = map[string]bool{
	"cigar": true, "cigars": true, "puro": true, "puros": true, "box": true, "boxes": true, "single": true,
	"singles": true, "pack": true, "pk": true, "count": true, "ct": true, "tube": true, "tubes": true,
	"the": true, "a": true, "an": true, "of": true, "ring": true, "gauge": true, "rg": true, "size": true,
	"and": true, // "Tobacco and Trust" for "Tobacco & Trust", whose "&" is no word
}

// isRing says whether a number can be a ring gauge.
func isRing(n string) bool {
	v, err := strconv.Atoi(n)
	return err == nil && v >= 26 && v <= 80
}

// resolveWords turns the text of a resolve query into words: sizes become
// optional ring gauges, listing words and counts ("box of 25") optional words,
// numerals one spelling, and split words are joined as search joins them.
func (ix *Index) resolveWords(text string) []qword {
	s := catalog.Fold(text)
	s = hashNum.ReplaceAllString(s, " no $1 ")
	var rings []string
	s = sizePair.ReplaceAllStringFunc(s, func(m string) string {
		for _, n := range sizePair.FindStringSubmatch(m)[1:] {
			if isRing(n) {
				rings = append(rings, n)
			}
		}
		return " "
	})
	s = sizeRing.ReplaceAllStringFunc(s, func(m string) string {
		rings = append(rings, sizeRing.FindStringSubmatch(m)[1])
		return " "
	})
	s = sizeLen.ReplaceAllStringFunc(s, func(m string) string {
		// A length is under a foot: "No. 60 INCH" is a name.
		if v, err := strconv.Atoi(strings.FieldsFunc(m, func(r rune) bool { return r < '0' || r > '9' })[0]); err == nil && v >= 12 {
			return m
		}
		return " "
	})

	raw := ix.splitCodes(ix.joinInitials(ix.joinSplitWords(ix.joinChunks(s))))
	if len(raw) > maxWords {
		raw = raw[:maxWords]
	}
	var out []qword
	for i := 0; i < len(raw); i++ {
		w := raw[i]
		prev := ""
		if len(out) > 0 {
			prev = out[len(out)-1].text
		}
		switch {
		case numberPrefix.MatchString(w) && !ix.known(w):
			m := numberPrefix.FindStringSubmatch(w)
			out = append(out, qword{text: "no"}, qword{text: m[2]})
		case numberWords[w] && i+1 < len(raw) && isNumber(numeral(raw[i+1])):
			out = append(out, qword{text: "no"})
		case isNumber(w) && (i+1 < len(raw) && countWord[raw[i+1]] || prev == "of" && i >= 2):
			out = append(out, qword{text: w, optional: true}) // "5 pack", "box of 25", "cabinet of 50"
		case isNumber(w) && isRing(w) && prev != "no" && i > 0:
			out = append(out, qword{text: w, optional: true}) // "Robusto 50"
		case fillerWords[w]:
			out = append(out, qword{text: w, optional: true})
		default:
			out = append(out, qword{text: numeral(w)})
		}
	}
	for _, r := range rings {
		out = append(out, qword{text: r, optional: true})
	}
	required := 0
	for _, w := range out {
		if !w.optional {
			required++
		}
	}
	if required == 0 { // nothing but filler: take it as written
		for i := range out {
			out[i].optional = false
		}
	}
	return out
}

// known says whether a word is a word of the index, or a derived one.
func (ix *Index) known(w string) bool { return ix.has(w) || ix.hasDerived(w) }

// joinChunks splits text into words as rawWords does, but keeps a run of
// words written without a space ("DT&T", "8-9-8", "E.P.") as one word when
// the index knows it joined.
func (ix *Index) joinChunks(s string) []string {
	var out []string
	for _, chunk := range strings.Fields(s) {
		ws := rawWords(chunk)
		if j := strings.Join(ws, ""); len(ws) >= 2 && ix.known(j) {
			ws = []string{j}
		}
		out = append(out, ws...)
	}
	return out
}

// joinInitials joins a run of single letters, with the particles between
// them, into the initialism the index knows ("R y J" → "ryj", "H de M" →
// "hdm", "R&J" → "rj").
func (ix *Index) joinInitials(words []string) []string {
	single := func(w string) bool { return len(w) == 1 && unicode.IsLetter(rune(w[0])) }
	var out []string
	for i := 0; i < len(words); i++ {
		if !single(words[i]) {
			out = append(out, words[i])
			continue
		}
		// The longest run of letters and particles ending on a letter.
		end, letters := i, 0
		for j := i; j < len(words) && (single(words[j]) || particles[words[j]]); j++ {
			if single(words[j]) {
				end, letters = j, letters+1
			}
		}
		if letters >= 2 {
			var all, bare strings.Builder
			for _, w := range words[i : end+1] {
				all.WriteByte(w[0])
				if single(w) {
					bare.WriteByte(w[0])
				}
			}
			joined := ""
			for _, c := range []string{all.String(), bare.String()} {
				if ix.known(c) {
					joined = c
					break
				}
			}
			if joined != "" {
				out = append(out, joined)
				i = end
				continue
			}
		}
		out = append(out, words[i])
	}
	return out
}

// code is letters then digits written as one word ("d4", "dl700").
var code = regexp.MustCompile(`^([a-z]+)([0-9]+)$`)

// splitCodes splits a code the index does not know into its letters and its
// number, which people write together for words of a name ("Partagás D4" for
// "Serie D No. 4", "DL700" for "DL 700").
func (ix *Index) splitCodes(words []string) []string {
	var out []string
	for _, w := range words {
		if m := code.FindStringSubmatch(w); m != nil && !ix.known(w) && !numberPrefix.MatchString(w) {
			out = append(out, m[1], m[2])
			continue
		}
		out = append(out, w)
	}
	return out
}

// splitCompound splits a word the index does not know into two it knows
// ("sungrown" → "sun grown", "blackmarket" → "black market"), or returns nil.
func (ix *Index) splitCompound(w string) []string {
	if len(w) < 6 || hasDigit(w) {
		return nil
	}
	for i := 3; i <= len(w)-3; i++ {
		if ix.has(w[:i]) && ix.has(w[i:]) {
			return []string{w[:i], w[i:]}
		}
	}
	return nil
}
