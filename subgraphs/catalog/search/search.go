// Package search is the catalog's search and resolve index: in memory, built from
// the store, rebuilt when the catalog changes.
//
// Matching works on folded words (lower case, accents stripped, so "padron" finds
// "Padrón") of a cigar's brand (with its aliases: "RyJ", "LFD"), its name (line and
// vitola) and its leaf words (wrapper, binder and filler types, regions, shades).
// A query word matches a word of the index exactly, as a prefix when it is the
// query's last word, or with typos: one from 5 characters, two from 9 (a swap of
// two neighbouring letters is one typo); numbers match exactly.
//
// Scores are integers that depend only on the query and the cigar, never on the
// rest of the corpus, so a keyset cursor (score, id) stays valid while cigars are
// added: paging never repeats or skips one. Ties are broken by ID.
package search

import (
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Fields a word can come from, as bits.
const (
	fieldBrand = 1 << iota
	fieldName
	fieldLeaf
)

// Match qualities, in points before the field weight.
const (
	qualityExact  = 100
	qualityPrefix = 75
	qualityTypo1  = 60
	qualityTypo2  = 40
)

// fieldWeight says how much a match in a field is worth (tenths).
var fieldWeight = map[int]int{fieldBrand: 10, fieldName: 10, fieldLeaf: 3}

type doc struct {
	cigar     *catalog.Cigar
	brand     *catalog.Brand
	brandKey  string   // folded brand name
	nameWords []string // folded words of the cigar's name, in order
	words     map[string]int
}

// Index is an immutable snapshot of the catalog, safe for concurrent use.
type Index struct {
	docs []doc
	// postings maps each word to the documents holding it.
	postings map[string][]int32
	// byLen groups the vocabulary by length, for typo matching.
	byLen   map[int][]string
	brands  map[string]*catalog.Brand // folded name or alias → brand
	aliases map[string][]string       // folded multi-word alias phrase → brand words
}

// Words splits folded text into words: runs of letters and digits.
func Words(s string) []string {
	return strings.FieldsFunc(catalog.Fold(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Build indexes cigars with their brands.
func Build(brands []*catalog.Brand, cigars []*catalog.Cigar) *Index {
	ix := &Index{postings: map[string][]int32{}, byLen: map[int][]string{}, brands: map[string]*catalog.Brand{}, aliases: map[string][]string{}}
	byID := map[string]*catalog.Brand{}
	for _, b := range brands {
		byID[b.ID] = b
		ix.brands[strings.Join(Words(b.Name), " ")] = b
		for _, a := range b.Aliases {
			ix.brands[strings.Join(Words(a), " ")] = b
		}
	}
	sorted := slices.Clone(cigars)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, c := range sorted {
		b := byID[c.BrandID]
		if b == nil {
			continue
		}
		d := doc{cigar: c, brand: b, brandKey: strings.Join(Words(b.Name), " "), nameWords: Words(c.Name), words: map[string]int{}}
		add := func(field int, text string) {
			for _, w := range Words(text) {
				d.words[w] |= field
			}
		}
		add(fieldBrand, b.Name)
		for _, a := range b.Aliases {
			add(fieldBrand, a)
		}
		add(fieldName, c.Name)
		for _, comps := range [][]catalog.Component{c.Wrapper, c.Binder, c.Filler} {
			for _, comp := range comps {
				add(fieldLeaf, comp.Type+" "+comp.Region)
				if comp.Shade != nil {
					add(fieldLeaf, *comp.Shade)
				}
			}
		}
		n := int32(len(ix.docs))
		for w := range d.words {
			if len(ix.postings[w]) == 0 {
				ix.byLen[len(w)] = append(ix.byLen[len(w)], w)
			}
			ix.postings[w] = append(ix.postings[w], n)
		}
		ix.docs = append(ix.docs, d)
	}
	for _, ws := range ix.byLen {
		sort.Strings(ws)
	}
	return ix
}

// Len is the number of cigars indexed.
func (ix *Index) Len() int { return len(ix.docs) }

// Brand returns the brand a name or alias (any case, accents optional) names.
func (ix *Index) Brand(nameOrAlias string) (*catalog.Brand, bool) {
	b, ok := ix.brands[strings.Join(Words(nameOrAlias), " ")]
	return b, ok
}

// allowedTypos is the typo budget of a query word of n characters.
func allowedTypos(word string) int {
	n := len([]rune(word))
	switch {
	case isNumber(word):
		return 0
	case n >= 9:
		return 2
	case n >= 5:
		return 1
	}
	return 0
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}

// termMatch is a vocabulary word a query word matched, with its quality.
type termMatch struct {
	word    string
	quality int
}

// matches finds the words of the vocabulary a query word matches.
func (ix *Index) matches(q string, last bool) []termMatch {
	var out []termMatch
	if _, ok := ix.postings[q]; ok {
		out = append(out, termMatch{q, qualityExact})
	}
	if last && !isNumber(q) {
		for l, ws := range ix.byLen {
			if l <= len(q) {
				continue
			}
			i := sort.SearchStrings(ws, q)
			for ; i < len(ws) && strings.HasPrefix(ws[i], q); i++ {
				out = append(out, termMatch{ws[i], qualityPrefix})
			}
		}
	}
	budget := allowedTypos(q)
	if budget == 0 {
		return out
	}
	for l := len(q) - budget; l <= len(q)+budget; l++ {
		for _, w := range ix.byLen[l] {
			if w == q || isNumber(w) {
				continue
			}
			if d := distance(q, w, budget); d <= budget {
				quality := qualityTypo1
				if d == 2 {
					quality = qualityTypo2
				}
				out = append(out, termMatch{w, quality})
			}
		}
	}
	return out
}

// distance is the optimal string alignment distance between a and b (a swap of
// neighbours counts one), or max+1 once it exceeds max.
func distance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) > max {
		return max + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Hit is a cigar with its score for a query.
type Hit struct {
	Cigar *catalog.Cigar
	Brand *catalog.Brand
	Score int
	// matchedAll says every query word matched; unmatchedDistinct counts the
	// distinctive words of the cigar's name the query did not mention.
	matchedAll        bool
	unmatchedDistinct int
}

// Points of the score besides word matches.
const (
	brandBonus          = 30  // every word of the brand's name matched
	unmatchedNamePoints = -4  // per distinctive word of the cigar's name the query did not match
	unmatchedGeneric    = -1  // per generic word ("Classic", "Series") it did not match
	missingWordPoints   = -45 // resolve only: per query word the cigar does not match
)

// mode says whether every query word must match (search) or not (resolve).
type mode int

const (
	allWords mode = iota
	anyWord
)

// Search returns the cigars matching every word of text, best first; brandID,
// when set, keeps only that brand's cigars.
func (ix *Index) Search(text, brandID string) []Hit { return ix.run(text, brandID, allWords) }

// score holds one cigar's running score.
type score struct {
	points  int
	matched int // query words matched
}

func (ix *Index) run(text, brandID string, m mode) []Hit {
	words := ix.joinSplitWords(Words(text))
	if len(words) == 0 {
		return nil
	}
	matchedTerms := map[string]bool{}
	brandTerms := map[string]bool{}
	scores := map[int32]*score{}
	for i, w := range words {
		tms := ix.matches(w, i == len(words)-1)
		best := map[int32]int{}
		for _, tm := range tms {
			matchedTerms[tm.word] = true
			for _, di := range ix.postings[tm.word] {
				f := ix.docs[di].words[tm.word]
				p := tm.quality * bestWeight(f) / 10
				if p > best[di] {
					best[di] = p
				}
				if f&fieldBrand != 0 {
					brandTerms[tm.word] = true
				}
			}
		}
		if m == allWords && i > 0 {
			for di := range scores { // keep only cigars matching this word too
				if _, ok := best[di]; !ok {
					delete(scores, di)
				}
			}
		}
		for di, p := range best {
			s, ok := scores[di]
			if !ok {
				if m == allWords && i > 0 {
					continue
				}
				s = &score{}
				scores[di] = s
			}
			s.points += p
			s.matched++
		}
	}
	hits := make([]Hit, 0, len(scores))
	for di, s := range scores {
		d := &ix.docs[di]
		if brandID != "" && d.brand.ID != brandID {
			continue
		}
		points := s.points + missingWordPoints*(len(words)-s.matched)
		distinct := 0
		for _, nw := range d.nameWords {
			switch {
			case matchedTerms[nw]:
			case genericWords[nw]:
				points += unmatchedGeneric
			default:
				points += unmatchedNamePoints
				distinct++
			}
		}
		if brandMatched(d.brandKey, brandTerms) {
			points += brandBonus
		}
		hits = append(hits, Hit{Cigar: d.cigar, Brand: d.brand, Score: points, matchedAll: s.matched == len(words), unmatchedDistinct: distinct})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Cigar.ID < hits[j].Cigar.ID
	})
	return hits
}

// genericWords are words of cigar names people leave out without meaning another
// cigar: "Montecristo No 2" means the Classic No. 2.
var genericWords = map[string]bool{
	"classic": true, "series": true, "serie": true, "original": true, "collection": true,
	"edition": true, "edicion": true, "line": true, "linea": true, "no": true,
	"de": true, "del": true, "la": true, "el": true, "y": true, "the": true,
}

// maxWords bounds the work a long query can cause.
const maxWords = 32

// joinSplitWords joins two neighbouring query words when together they are a word
// of the index and apart they are not ("monte cristo" → "montecristo", "opus x" →
// "opusx"), as people often split or join words of brand and line names.
func (ix *Index) joinSplitWords(words []string) []string {
	if len(words) > maxWords {
		words = words[:maxWords]
	}
	out := make([]string, 0, len(words))
	for i := 0; i < len(words); i++ {
		if i+1 < len(words) {
			joined := words[i] + words[i+1]
			_, ok := ix.postings[joined]
			_, okA := ix.postings[words[i]]
			_, okB := ix.postings[words[i+1]]
			if ok && !(okA && okB) {
				out = append(out, joined)
				i++
				continue
			}
		}
		out = append(out, words[i])
	}
	return out
}

func bestWeight(fields int) int {
	w := 0
	for f, weight := range fieldWeight {
		if fields&f != 0 && weight > w {
			w = weight
		}
	}
	return w
}

func brandMatched(brandKey string, terms map[string]bool) bool {
	for _, w := range strings.Fields(brandKey) {
		if !terms[w] {
			return false
		}
	}
	return true
}
