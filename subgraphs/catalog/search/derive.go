package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Names derived from the catalog's own names, for any catalog, imported or
// not, so that what people type for a brand or a cigar needs no alias:
//   - initialisms of a brand of several words, with and without its particles
//     ("Romeo y Julieta" → "ryj", "rj"; "La Flor Dominicana" → "lfd"; a word
//     of one or two letters may stay whole: "AJ Fernandez" → "ajf");
//   - words a name writes joined by a hyphen, a dot or an apostrophe, joined
//     ("Te-Amo" → "teamo", "E.P." → "ep", "8-9-8" → "898");
//   - initialisms of the start of a cigar's name, which is where its line is,
//     numbers kept whole ("Liga Privada No. 9 Robusto" → "lp", "lp9"; "Master
//     Blends 3" → "mb3"), and of its last two words, which name a vitola
//     ("Double Corona" → "dc", "Belicosos Finos" → "bf");
//   - and so brand and name together, the brand's initialism (its initial
//     when it is one word) before a name's ("Partagás Serie D No. 4" →
//     "psd4", "H. Upmann Classic Sir Winston" → "husw"): a query word
//     unknown to the index is read so when it splits that way (splitInitials),
//     which spares the index a word of every cigar.
//
// They depend only on the cigar and its brand, so Build and Apply derive the
// same. (What depends on the other brands, a brand's distinctive words, is
// decided per snapshot: see distinctBrandWords.) Derived words live apart from
// the words of the names (derivedMark): a query word matches them exactly only,
// never as a prefix or with typos, and a word of a name is never taken for one.

// derivedMark starts the vocabulary entry of a derived word; initialMark
// that of a brand's initial (matched only by splitInitials).
const (
	derivedMark = "\x01"
	initialMark = "\x02"
)

// qualityDerived is the match quality of a derived word, under an exact
// match of a word of a name.
const qualityDerived = 90

// particles are the little words an initialism may leave out.
var particles = map[string]bool{
	"de": true, "del": true, "la": true, "las": true, "los": true, "el": true, "y": true, "and": true,
	"the": true, "of": true, "d": true, "du": true, "des": true, "da": true, "di": true, "en": true,
}

// maxCover: a derived word stands for words among the first 32 of a name.
const maxCover = 32

// derivedSpan is a derived word of a cigar's name and the words of the name
// it stands for (bit i: the name's word i, up to maxCover).
type derivedSpan struct {
	word  int32
	cover uint32
}

// derivedWords are a cigar's derived words, as Words spells them.
type derivedWords struct {
	brand []string      // the brand's initialisms and joined words
	spans []derivedText // of the name
	// initial is a brand of one word's initial, which a query reads only
	// before a derived word of a name ("p" of "psd4": initialMark).
	initial string
}

type derivedText struct {
	text  string
	cover uint32
}

// derive returns the derived words of a cigar of brand b.
func derive(b *catalog.Brand, c *catalog.Cigar) derivedWords {
	var out derivedWords
	seen := map[string]bool{}
	keep := func(w string) bool {
		if seen[w] || !usable(w) {
			return false
		}
		seen[w] = true
		return true
	}
	// A joined word may be digits only ("8-9-8" → "898").
	keepJoined := func(w string) bool {
		if seen[w] || !usable(w) && !(isNumber(w) && len(w) >= 3) {
			return false
		}
		seen[w] = true
		return true
	}
	brandWords, brandJoined := chunks(b.Name)
	if len(brandWords) == 1 {
		out.initial = initialOf(brandWords[0])
	}
	for _, w := range initialisms(brandWords) {
		if keep(w) {
			out.brand = append(out.brand, w)
		}
	}
	for _, j := range brandJoined {
		if keepJoined(j.text) {
			out.brand = append(out.brand, j.text)
		}
	}

	words, joined := chunks(c.Name)
	for _, j := range joined {
		if keepJoined(j.text) {
			out.spans = append(out.spans, j)
		}
	}
	if len(words) == 0 {
		return out
	}
	// The name's words an initialism reads: "No" is left out ("Serie D No.
	// 4" → "sd4"), numbers stay whole.
	type initial struct {
		pos  int
		text string
	}
	var inits []initial
	for i, w := range words {
		if w == "no" || i >= maxCover {
			continue
		}
		inits = append(inits, initial{i, initialOf(w)})
	}
	span := func(from, to int) (string, uint32) { // inits[from:to]
		var sb strings.Builder
		var cover uint32
		for _, in := range inits[from:to] {
			sb.WriteString(in.text)
		}
		for p := inits[from].pos; p <= inits[to-1].pos; p++ {
			cover |= 1 << p
		}
		return sb.String(), cover
	}
	// The start of the name (its line), up to three words, and its last two
	// words (a vitola).
	for k := 2; k <= min(len(inits), 3); k++ {
		if w, cover := span(0, k); keep(w) {
			out.spans = append(out.spans, derivedText{w, cover})
		}
	}
	if n := len(inits); n >= 3 {
		if w, cover := span(n-2, n); keep(w) {
			out.spans = append(out.spans, derivedText{w, cover})
		}
	}
	return out
}

// usable says whether a derived word is worth indexing: two letters or more
// (a letter and a number is how people write a name's own words, "D4"), and
// not a little word of its own ("de", "no").
func usable(w string) bool {
	letters := 0
	for _, r := range w {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters >= 2 && !particles[w] && !genericWords[w] && !numberWords[w]
}

// initialOf is a word's part of an initialism: a number whole, else its first
// letter.
func initialOf(w string) string {
	if isNumber(w) {
		return w
	}
	_, n := utf8.DecodeRuneInString(w)
	return w[:n]
}

// initialisms of a name of several words: every word's initial; without the
// particles; and with words of one or two letters whole ("AJ Fernandez" →
// "af", "ajf").
func initialisms(words []string) []string {
	if len(words) < 2 {
		return nil
	}
	var all, short, bare strings.Builder
	for _, w := range words {
		all.WriteString(initialOf(w))
		if len([]rune(w)) <= 2 && !particles[w] {
			short.WriteString(w)
		} else {
			short.WriteString(initialOf(w))
		}
		if !particles[w] {
			bare.WriteString(initialOf(w))
		}
	}
	out := []string{all.String()}
	for _, v := range []string{bare.String(), short.String()} {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// chunks reads text's words (as Words does) and the joined form of each run
// of words written without a space between them ("8-9-8", "d'Orsay", "E.P.").
func chunks(text string) (words []string, joined []derivedText) {
	for _, chunk := range strings.Fields(catalog.Fold(text)) {
		ws := Words(chunk)
		if len(ws) >= 2 {
			var cover uint32
			for i := range ws {
				if p := len(words) + i; p < maxCover {
					cover |= 1 << p
				}
			}
			joined = append(joined, derivedText{strings.Join(rawWords(chunk), ""), cover})
		}
		words = append(words, ws...)
	}
	return words, joined
}

// distinctBrandWords finds, for each brand of brandList, the words of its
// name of four letters or more that no other brand of the catalog (byID)
// holds in its name or aliases: "Fuente" names Arturo Fuente, "Upmann" H.
// Upmann, while "Rey" names none of Cuesta-Rey, El Rey del Mundo and Saint
// Luis Rey. They depend on the brands only, never on the cigars, so Build and
// Apply find the same.
func (ix *Index) distinctBrandWords() [][]int32 {
	owners := map[string]string{} // word → its brand's ID, "" when several
	for id, b := range ix.byID {
		for _, text := range append([]string{b.Name}, b.Aliases...) {
			for _, w := range Words(text) {
				if o, ok := owners[w]; ok && o != id {
					owners[w] = ""
				} else {
					owners[w] = id
				}
			}
		}
	}
	out := make([][]int32, len(ix.brandList))
	for i, e := range ix.brandList {
		for _, w := range Words(e.brand.Name) {
			if owners[w] != e.id || len([]rune(w)) < 4 || isNumber(w) || !usable(w) {
				continue
			}
			if id, ok := ix.wordID[w]; ok && !slices.Contains(out[i], id) {
				out[i] = append(out[i], id)
			}
		}
	}
	return out
}
