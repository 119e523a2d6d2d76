// Package search is the catalog's search and resolve index: in memory, built from
// the store, then kept in step with it by applying what changed (Index.Apply,
// Live).
//
// Matching works on folded words (lower case, accents stripped, so "padron" finds
// "Padrón") of a cigar's brand (with its aliases: "Monte"), its name (line and
// vitola), its leaf words (wrapper, binder and filler types, regions, shades),
// and the names derived from brand and name ("RyJ", "LFD", "LP9": derive.go).
// A query word matches a word of the index exactly, as a prefix when it is the
// query's last word, or with typos: one from 5 characters, two from 9 (a swap of
// two neighbouring letters is one typo); words with digits match exactly, and a Roman
// numeral is the same word as its Arabic spelling ("Siglo VI" = "Siglo 6").
// A cigar's own aliases ("PSD4") are words of its name.
//
// Scores are integers that depend only on the query and the cigar, never on the
// rest of the corpus, so a keyset cursor (score, id) stays valid while cigars are
// added: paging never repeats or skips one. Ties are broken by ID.
package search

import (
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Fields a word can come from, as bits.
const (
	fieldBrand uint8 = 1 << iota
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

type doc struct {
	cigar *catalog.Cigar
	brand *catalog.Brand
	// (The words of its name are in Index.nameFlat, of its own aliases in
	// Index.aliasFlat, of its brand's in Index.brandList.)
	// derived are the words derived from its name ("lp9" for "Liga Privada
	// No. 9"), with the words each stands for.
	derived []derivedSpan
}

// posting is a document holding a word, with the fields it holds it in.
type posting struct {
	doc    int32
	fields uint8
}

// Index is an immutable snapshot of the catalog, safe for concurrent use.
// Apply makes the next snapshot from it and the changes (see apply.go).
type Index struct {
	// docs are documents by position. Build places them in ID order; Apply
	// appends changed cigars after the first sorted ones and leaves their
	// former positions unreached (no posting or docOf entry names them).
	docs   []doc
	sorted int32
	// Words have integer IDs; postings[id] lists the documents holding word id
	// (none once Apply moved every document holding it elsewhere: such a word
	// is not a word of the index, see has).
	words    []string
	wordID   map[string]int32
	postings [][]posting
	generic  []bool // generic[id]: a generic word of names ("classic")
	// byLen groups word IDs by word length (sorted by word), for prefix and typo
	// matching.
	byLen   map[int][]int32
	brands  map[string]*catalog.Brand // folded name or alias → brand
	byID    map[string]*catalog.Brand
	scratch sync.Pool // *scratch, sized to this index
	// matchCache remembers which words a query word matched; prevCache is the
	// snapshot's before Apply, whose answers hold for the first prevWords words.
	matchCache *lru.Cache[string, []termMatch]
	prevCache  *lru.Cache[string, []termMatch]
	prevWords  int
	// docOf finds a cigar's position; documents caches its rendered REST form.
	docOf     map[string]int32
	documents []atomic.Pointer[catalog.Document]
	// brandWords of each distinct brand (brandPos finds a brand's entry), and
	// per document its brand's position there and whether it has aliases of
	// its own: what a query needs to bound a cigar's score without reading its
	// document.
	brandList   []brandEntry
	brandPos    map[string]int32
	docBrand    []int32
	docHasAlias []bool
	// brandDistinct[i] are the words of brandList[i]'s name that no other
	// brand's name or alias holds ("Fuente", "Upmann"): one of them names the
	// brand. brandDistinctOf is the brands they were found among (byID).
	brandDistinct   [][]int32
	brandDistinctOf map[string]*catalog.Brand
	// nameFlat holds every document's name words end to end, document i's at
	// nameFlat[nameOff[i]:nameOff[i+1]], read in order when scoring many.
	nameFlat []int32
	nameOff  []int32
	// aliasFlat holds, the same way (aliasOff), the distinctive words of each
	// document's own aliases ("PSD4", "Epi No. 2", which name brand, line and
	// vitola at once), each alias's followed by aliasEnd. aliasWord[id]: word
	// id is the key of an alias in some document (after Apply, possibly in a
	// former one only): of its words, the one fewest documents held when it
	// was added. An alias is named only with its key matched, so a query
	// matching no key skips every alias.
	aliasFlat []int32
	aliasOff  []int32
	aliasWord []bool
}

// aliasEnd ends an alias's words in Index.aliasFlat.
const aliasEnd = -1

// brandEntry is a brand's words: its name's and each of its aliases'.
type brandEntry struct {
	id      string
	brand   *catalog.Brand
	words   []int32
	aliases [][]int32
}

// Words splits folded text into words: runs of letters and digits, with Roman
// numerals written in Arabic ("Siglo VI" → "siglo", "6").
func Words(s string) []string {
	ws := rawWords(s)
	for i, w := range ws {
		ws[i] = numeral(w)
	}
	return ws
}

// Build indexes cigars with their brands (a cigar of a brand not given is
// left out).
func Build(brands []*catalog.Brand, cigars []*catalog.Cigar) *Index {
	ix := &Index{wordID: map[string]int32{}, byLen: map[int][]int32{}, brandPos: map[string]int32{},
		byID: make(map[string]*catalog.Brand, len(brands)), nameOff: []int32{0}, aliasOff: []int32{0}}
	for _, b := range brands {
		ix.byID[b.ID] = b
	}
	ix.brands = brandKeys(ix.byID)
	sorted := slices.Clone(cigars)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	ix.docOf = make(map[string]int32, len(sorted))
	for _, c := range sorted {
		if b := ix.byID[c.BrandID]; b != nil {
			ix.addDoc(c, b)
		}
	}
	ix.sorted = int32(len(ix.docs))
	for _, ids := range ix.byLen {
		ix.sortByWord(ids)
	}
	ix.ready(nil)
	return ix
}

// brandKeys maps each folded name and alias of the brands to its brand, in
// ID order, so that of two brands writing a name alike the same one wins in
// every snapshot.
func brandKeys(byID map[string]*catalog.Brand) map[string]*catalog.Brand {
	out := make(map[string]*catalog.Brand, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		b := byID[id]
		out[strings.Join(Words(b.Name), " ")] = b
		for _, a := range b.Aliases {
			out[strings.Join(Words(a), " ")] = b
		}
	}
	return out
}

// docWords reads a cigar's words (of its brand's too) through word, which
// gives a word's ID: the document, its name's words, its brand's and its
// brand's aliases', its own aliases', and the fields each word is in.
func docWords(c *catalog.Cigar, b *catalog.Brand, word func(string) int32) (d doc, names, brandWords []int32, aliasWords, cigarAliases [][]int32, fields map[int32]uint8) {
	fields = map[int32]uint8{}
	add := func(field uint8, text string) []int32 {
		var ids []int32
		for _, w := range Words(text) {
			id := word(w)
			fields[id] |= field
			ids = append(ids, id)
		}
		return ids
	}
	addDerived := func(field uint8, text string) int32 {
		id := word(derivedMark + text)
		fields[id] |= field
		return id
	}
	d = doc{cigar: c, brand: b}
	brandWords = add(fieldBrand, b.Name)
	for _, a := range b.Aliases {
		aliasWords = append(aliasWords, add(fieldBrand, a))
	}
	names = add(fieldName, c.Name)
	for _, a := range c.Aliases {
		if ws := add(fieldName, a); len(ws) > 0 {
			cigarAliases = append(cigarAliases, ws)
		}
	}
	dw := derive(b, c)
	for _, w := range dw.brand {
		aliasWords = append(aliasWords, []int32{addDerived(fieldBrand, w)})
	}
	if dw.initial != "" {
		id := word(initialMark + dw.initial)
		fields[id] |= fieldBrand
		aliasWords = append(aliasWords, []int32{id})
	}
	for _, sp := range dw.spans {
		d.derived = append(d.derived, derivedSpan{word: addDerived(fieldName, sp.text), cover: sp.cover})
	}
	for _, comps := range [][]catalog.Component{c.Wrapper, c.Binder, c.Filler} {
		for _, comp := range comps {
			add(fieldLeaf, comp.Type+" "+comp.Region)
			if comp.Shade != nil {
				add(fieldLeaf, *comp.Shade)
			}
		}
	}
	return d, names, brandWords, aliasWords, cigarAliases, fields
}

// addDoc indexes a cigar at the next position. Its postings go at the end of
// their lists, which stay in position order.
func (ix *Index) addDoc(c *catalog.Cigar, b *catalog.Brand) {
	n := int32(len(ix.docs))
	d, names, brandWords, aliasWords, cigarAliases, fields := docWords(c, b, ix.intern)
	for id, f := range fields {
		ix.postings[id] = append(ix.postings[id], posting{doc: n, fields: f})
	}
	bi, ok := ix.brandPos[b.ID]
	if !ok || ix.brandList[bi].brand != b {
		bi = int32(len(ix.brandList))
		ix.brandPos[b.ID] = bi
		ix.brandList = append(ix.brandList, brandEntry{id: b.ID, brand: b, words: brandWords, aliases: aliasWords})
	}
	ix.docs = append(ix.docs, d)
	ix.docBrand = append(ix.docBrand, bi)
	ix.docHasAlias = append(ix.docHasAlias, len(cigarAliases) > 0)
	ix.nameFlat = append(ix.nameFlat, names...)
	ix.nameOff = append(ix.nameOff, int32(len(ix.nameFlat)))
	for _, ws := range cigarAliases {
		// Generic words need not be written to name an alias, and an alias
		// of generic words only is never named (cigarAliasNamed).
		key := int32(aliasEnd)
		for _, w := range ws {
			if !ix.generic[w] {
				ix.aliasFlat = append(ix.aliasFlat, w)
				if key == aliasEnd || len(ix.postings[w]) < len(ix.postings[key]) {
					key = w
				}
			}
		}
		if key != aliasEnd {
			ix.aliasFlat = append(ix.aliasFlat, aliasEnd)
			ix.aliasWord[key] = true
		}
	}
	ix.aliasOff = append(ix.aliasOff, int32(len(ix.aliasFlat)))
	ix.docOf[c.ID] = n
}

func (ix *Index) sortByWord(ids []int32) {
	sort.Slice(ids, func(i, j int) bool { return ix.words[ids[i]] < ix.words[ids[j]] })
}

// ready makes the per-snapshot caches: rendered documents (carried over from
// prev where prev holds the same document), query scratch space and matches.
func (ix *Index) ready(prev *Index) {
	ix.scratch.New = func() any { return newScratch(len(ix.docs), len(ix.words), len(ix.brandList)) }
	ix.documents = make([]atomic.Pointer[catalog.Document], len(ix.docs))
	ix.matchCache, _ = lru.New[string, []termMatch](8192)
	// A brand's distinctive words change only with the brands: Apply shares
	// byID while no brand changes.
	if prev != nil && len(prev.brandDistinct) == len(ix.brandList) &&
		reflect.ValueOf(prev.brandDistinctOf).UnsafePointer() == reflect.ValueOf(ix.byID).UnsafePointer() {
		ix.brandDistinct, ix.brandDistinctOf = prev.brandDistinct, prev.brandDistinctOf
	} else {
		ix.brandDistinct, ix.brandDistinctOf = ix.distinctBrandWords(), ix.byID
	}
	if prev == nil {
		return
	}
	for i := range prev.documents {
		if d := prev.documents[i].Load(); d != nil && ix.docs[i].cigar == prev.docs[i].cigar && ix.docs[i].brand == prev.docs[i].brand {
			ix.documents[i].Store(d)
		}
	}
	ix.prevCache, ix.prevWords = prev.matchCache, len(prev.words)
}

// Document returns an indexed cigar's REST representation, rendered once per
// snapshot (a snapshot never changes), or false for a cigar it does not hold.
func (ix *Index) Document(cigarID string) (catalog.Document, bool, error) {
	i, ok := ix.docOf[cigarID]
	if !ok {
		return nil, false, nil
	}
	if d := ix.documents[i].Load(); d != nil {
		return *d, true, nil
	}
	d, err := catalog.NewDocument(ix.docs[i].cigar, ix.docs[i].brand)
	if err != nil {
		return nil, false, err
	}
	ix.documents[i].Store(&d)
	return d, true, nil
}

// intern returns a word's ID, adding it to the vocabulary when new.
func (ix *Index) intern(w string) int32 {
	if id, ok := ix.wordID[w]; ok {
		return id
	}
	id := int32(len(ix.words))
	ix.words = append(ix.words, w)
	ix.wordID[w] = id
	ix.postings = append(ix.postings, nil)
	ix.generic = append(ix.generic, genericWords[w])
	ix.aliasWord = append(ix.aliasWord, false)
	if !strings.HasPrefix(w, derivedMark) && !strings.HasPrefix(w, initialMark) { // matched exactly only
		ix.byLen[len(w)] = append(ix.byLen[len(w)], id)
	}
	return id
}

// Len is the number of cigars indexed.
func (ix *Index) Len() int { return len(ix.docOf) }

// BrandByID returns an indexed brand by its ID.
func (ix *Index) BrandByID(id string) (*catalog.Brand, bool) {
	b, ok := ix.byID[id]
	return b, ok
}

// Brand returns the brand a name or alias (any case, accents optional) names.
func (ix *Index) Brand(nameOrAlias string) (*catalog.Brand, bool) {
	b, ok := ix.brands[strings.Join(Words(nameOrAlias), " ")]
	return b, ok
}

// allowedTypos is the typo budget of a query word of n characters.
func allowedTypos(word string) int {
	n := len([]rune(word))
	switch {
	case hasDigit(word): // numbers and codes ("psd4", "t52") match exactly
		return 0
	case n >= 9:
		return 2
	case n >= 5:
		return 1
	}
	return 0
}

func hasDigit(w string) bool { return strings.ContainsFunc(w, unicode.IsDigit) }

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
	word    int32
	quality int32
}

// has says whether w is a word of the index: of a document it holds.
func (ix *Index) has(w string) bool {
	id, ok := ix.wordID[w]
	return ok && len(ix.postings[id]) > 0
}

// hasDerived says whether w is a derived word of the index (derive.go).
func (ix *Index) hasDerived(w string) bool { return ix.has(derivedMark + w) }

// matches finds the words of the vocabulary a query word matches. Answers are
// cached: people type the same words over and over. Apply only adds words, so
// the snapshot before it answers for its words and only the new ones are read.
func (ix *Index) matches(q string, last bool) []termMatch {
	key := q
	if last {
		key += "\x00"
	}
	if tms, ok := ix.matchCache.Get(key); ok {
		return tms
	}
	var tms []termMatch
	if prev, ok := ix.fromPrev(key); ok {
		tms = slices.Clip(prev)
		for id := int32(ix.prevWords); id < int32(len(ix.words)); id++ {
			tms = appendMatch(tms, q, last, id, ix.words[id])
		}
	} else {
		tms = ix.findMatches(q, last)
	}
	ix.matchCache.Add(key, tms)
	return tms
}

// looseMatches finds the words a query word of four letters or more matches
// with one typo more than allowedTypos allows: resolve tries it for a word
// that matched nothing else, so that a typo too many ("Shot Churchill",
// "Edmondu") is not taken for noise, which would leave the cigar without that
// word as the answer. Answers are cached, never carried over by Apply.
func (ix *Index) looseMatches(q string) []termMatch {
	key := q + "\x02"
	if tms, ok := ix.matchCache.Get(key); ok {
		return tms
	}
	var tms []termMatch
	budget := allowedTypos(q) + 1
	for l := len(q) - budget; l <= len(q)+budget; l++ {
		for _, id := range ix.byLen[l] {
			if w := ix.words[id]; w != q && !hasDigit(w) && distance(q, w, budget) <= budget {
				tms = append(tms, termMatch{id, qualityTypo2})
			}
		}
	}
	ix.matchCache.Add(key, tms)
	return tms
}

func (ix *Index) fromPrev(key string) ([]termMatch, bool) {
	if ix.prevCache == nil {
		return nil, false
	}
	return ix.prevCache.Peek(key)
}

// appendMatch adds vocabulary word w (ID id) to out if query word q matches
// it, as findMatches would find it.
func appendMatch(out []termMatch, q string, last bool, id int32, w string) []termMatch {
	if strings.HasPrefix(w, initialMark) {
		return out
	}
	if strings.HasPrefix(w, derivedMark) {
		if w[len(derivedMark):] == q {
			out = append(out, termMatch{id, qualityDerived})
		}
		return out
	}
	if w == q {
		return append(out, termMatch{id, qualityExact})
	}
	if last && !isNumber(q) && len(w) > len(q) && strings.HasPrefix(w, q) {
		out = append(out, termMatch{id, qualityPrefix})
	}
	budget := allowedTypos(q)
	if budget == 0 || abs(len(w)-len(q)) > budget || hasDigit(w) {
		return out
	}
	if d := distance(q, w, budget); d <= budget {
		out = append(out, termMatch{id, typoQuality(d)})
	}
	return out
}

// typoQuality is the match quality of a word d typos (1 or 2) away.
func typoQuality(d int) int32 {
	if d == 2 {
		return qualityTypo2
	}
	return qualityTypo1
}

func (ix *Index) findMatches(q string, last bool) []termMatch {
	var out []termMatch
	exact, ok := ix.wordID[q]
	if ok {
		out = append(out, termMatch{exact, qualityExact})
	}
	if id, ok := ix.wordID[derivedMark+q]; ok {
		out = append(out, termMatch{id, qualityDerived})
	}
	if last && !isNumber(q) {
		for l, ids := range ix.byLen {
			if l <= len(q) {
				continue
			}
			i := sort.Search(len(ids), func(i int) bool { return ix.words[ids[i]] >= q })
			for ; i < len(ids) && strings.HasPrefix(ix.words[ids[i]], q); i++ {
				out = append(out, termMatch{ids[i], qualityPrefix})
			}
		}
	}
	budget := allowedTypos(q)
	if budget == 0 {
		return out
	}
	for l := len(q) - budget; l <= len(q)+budget; l++ {
		for _, id := range ix.byLen[l] {
			w := ix.words[id]
			if w == q || hasDigit(w) {
				continue
			}
			if d := distance(q, w, budget); d <= budget {
				out = append(out, termMatch{id, typoQuality(d)})
			}
		}
	}
	return out
}

// distance is the optimal string alignment distance between a and b (a swap of
// neighbours counts one), or max+1 once it exceeds max. Words of up to 32
// characters are compared without allocating.
func distance(a, b string, max int) int {
	var ba, bb [32]rune
	ra, rb := toRunes(a, ba[:0]), toRunes(b, bb[:0])
	if abs(len(ra)-len(rb)) > max {
		return max + 1
	}
	var r0, r1, r2 [33]int
	prev2, prev, cur := r0[:len(rb)+1], r1[:len(rb)+1], r2[:len(rb)+1]
	if len(rb) >= 33 {
		prev2, prev, cur = make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	}
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

func toRunes(s string, buf []rune) []rune {
	for _, r := range s {
		buf = append(buf, r)
	}
	return buf
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
	brandNamed        bool // every word of the brand's name (or an alias) matched
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
func (ix *Index) Search(text, brandID string) []Hit {
	hits := ix.run(ix.searchWords(text), brandID, allWords)
	sortHits(hits)
	return hits
}

// SearchPage returns the n best cigars ranking after the position after (nil:
// from the top), and whether more follow. It selects the page without sorting
// every match.
func (ix *Index) SearchPage(text, brandID string, after *Position, n int) ([]Hit, bool) {
	top := ix.SearchWindow(text, brandID, Window{After: after, N: n})
	if len(top) > n {
		return top[:n], true
	}
	return top, false
}

// Window bounds a page of a search: the hits ranking strictly between After
// and Before (nil: unbounded), the first N of them or, when Backward, the last N.
type Window struct {
	After, Before *Position
	N             int
	Backward      bool
}

// SearchWindow returns up to N+1 hits of the window in reading order: best
// first, or worst first when Backward (the extra hit says more are left).
func (ix *Index) SearchWindow(text, brandID string, w Window) []Hit {
	if !w.Backward {
		words := ix.searchWords(text)
		if len(words) == 0 || len(ix.docs) == 0 {
			return nil
		}
		sc := ix.scratch.Get().(*scratch)
		defer func() { sc.reset(); ix.scratch.Put(sc) }()
		required := ix.collect(words, allWords, sc)
		var keep func(Hit) bool
		if w.After != nil || w.Before != nil {
			keep = func(h Hit) bool {
				return (w.After == nil || ranksAfter(h, *w.After)) && (w.Before == nil || ranksBefore(h, *w.Before))
			}
		}
		return ix.top(required, brandID, allWords, w.N+1, keep, sc)
	}
	hits := ix.run(ix.searchWords(text), brandID, allWords)
	if w.After != nil || w.Before != nil {
		kept := hits[:0]
		for _, h := range hits {
			if (w.After == nil || ranksAfter(h, *w.After)) && (w.Before == nil || ranksBefore(h, *w.Before)) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	// Backwards pages are rarer: sort them all and read from the end.
	sortHits(hits)
	out := make([]Hit, 0, w.N+1)
	for i := len(hits) - 1; i >= 0 && len(out) < w.N+1; i-- {
		out = append(out, hits[i])
	}
	return out
}

func ranksBefore(h Hit, p Position) bool {
	return h.Score > p.Score || (h.Score == p.Score && h.Cigar.ID < p.ID)
}

func ranksAfter(h Hit, p Position) bool {
	return h.Score < p.Score || (h.Score == p.Score && h.Cigar.ID > p.ID)
}

func less(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Cigar.ID < b.Cigar.ID
}

func sortHits(hits []Hit) { sort.Slice(hits, func(i, j int) bool { return less(hits[i], hits[j]) }) }

// scratch holds one query's working arrays, reused through a pool.
type scratch struct {
	points  []int32 // per document
	matched []uint8 // query words matched, per document
	// mask: which query words matched, per document (bit i: words[i]), in
	// resolve only (masked): search never reads it, and writing and
	// clearing it for every document a word reaches cost search about 10%
	// at 100k cigars.
	mask     []uint64
	masked   bool
	wordBest []int32 // per document, for the current word
	touched  []int32 // documents with any points
	wordDocs []int32 // documents the current word reached
	// termCount: per vocabulary word, how many query words matched it (see
	// mentions).
	termCount []uint8
	// derivedSeen: a query word matched a derived word ("rj"); when none
	// did, no document's derived spans need reading.
	derivedSeen bool
	// aliasSeen: a query word matched the key of a cigar's own alias
	// (Index.aliasWord); when none did, no document's aliases need reading.
	aliasSeen bool
	brandHit  []bool  // per vocabulary word: matched as a brand word
	terms     []int32 // words set in termCount/brandHit, to reset them
	// brandAt: the query words (by position) that matched a brand word.
	brandAt []wordAt
	// Per brand: every word of its name matched as a brand word (or a word
	// only it has); every word of one of its aliases did; the query writes
	// its name (fullHit), which consumes the query words that matched it
	// (mentions).
	brandAll   []bool
	aliasNamed []bool
	brandFull  []bool
	// lineBrands: the brands with a cigar whose name holds the word being
	// collected (collect).
	lineBrands []int32
	// Candidates of a top-k selection with their score bounds, and a histogram
	// of the bounds.
	cand   []int32
	bound  []int32
	counts []int32
}

// wordAt is a vocabulary word a query word matched, and the query word's
// position.
type wordAt struct {
	word int32
	pos  int
}

func newScratch(docs, words, brands int) *scratch {
	return &scratch{points: make([]int32, docs), matched: make([]uint8, docs), mask: make([]uint64, docs), wordBest: make([]int32, docs),
		termCount: make([]uint8, words), brandHit: make([]bool, words),
		brandAll: make([]bool, brands), aliasNamed: make([]bool, brands), brandFull: make([]bool, brands)}
}

func (sc *scratch) reset() {
	for _, d := range sc.touched {
		sc.points[d], sc.matched[d] = 0, 0
	}
	if sc.masked {
		for _, d := range sc.touched {
			sc.mask[d] = 0
		}
	}
	for _, w := range sc.terms {
		sc.termCount[w], sc.brandHit[w] = 0, false
	}
	sc.touched, sc.wordDocs, sc.terms, sc.brandAt = sc.touched[:0], sc.wordDocs[:0], sc.terms[:0], sc.brandAt[:0]
	sc.derivedSeen, sc.aliasSeen, sc.masked = false, false, false
	sc.cand, sc.bound = sc.cand[:0], sc.bound[:0]
}

var weights = [...]int32{fieldBrand: 10, fieldName: 10, fieldLeaf: 3}

// fieldWeight is the weight of a posting's best field, by its field bits.
var fieldWeight = func() (out [8]int32) {
	for fields := range out {
		for _, f := range [...]uint8{fieldBrand, fieldName, fieldLeaf} {
			if uint8(fields)&f != 0 && weights[f] > out[fields] {
				out[fields] = weights[f]
			}
		}
	}
	return out
}()

// searchWords are the words of a search query, all required.
func (ix *Index) searchWords(text string) []qword {
	raw := ix.joinSplitWords(rawWords(text))
	out := make([]qword, len(raw))
	for i, w := range raw {
		out[i] = qword{text: numeral(w)}
	}
	return out
}

// run returns every cigar the words reach (search: that match them all), with
// its score.
func (ix *Index) run(words []qword, brandID string, m mode) []Hit {
	if len(words) == 0 || len(ix.docs) == 0 {
		return nil
	}
	sc := ix.scratch.Get().(*scratch)
	defer func() { sc.reset(); ix.scratch.Put(sc) }()
	required := ix.collect(words, m, sc)
	hits := make([]Hit, 0, len(sc.touched))
	for _, di := range sc.touched {
		if ix.kept(di, brandID, m, required, sc) {
			hits = append(hits, ix.score(di, required, sc))
		}
	}
	return hits
}

// collect adds up, per document, the points of the words it matches and how
// many it matches, and returns the number of words that are not optional.
func (ix *Index) collect(words []qword, m mode, sc *scratch) (required int) {
	sc.masked = m == anyWord
	for i, w := range words {
		tms := ix.matches(w.text, i == len(words)-1 || w.prefix)
		switch {
		case w.loose:
			tms = ix.looseMatches(w.text)
		case w.initial:
			tms = ix.initialMatches(w.text)
		}
		for j, tm := range tms {
			n := sc.termCount[tm.word]
			switch {
			case n == 0:
				sc.terms = append(sc.terms, tm.word)
				sc.termCount[tm.word] = 1
				sc.derivedSeen = sc.derivedSeen || strings.HasPrefix(ix.words[tm.word], derivedMark)
				sc.aliasSeen = sc.aliasSeen || ix.aliasWord[tm.word]
			// (A word matched as a prefix and with a typo is listed twice.)
			case n < 255 && !slices.ContainsFunc(tms[:j], func(o termMatch) bool { return o.word == tm.word }):
				sc.termCount[tm.word]++
			}
			// In resolve, a word of a brand's name written more often than the
			// name holds it is no more the brand's: it names the brand's
			// cigars with it in their names, and a cigar of that brand
			// without does not match it ("Gran Corsario Gran Robusto" is not
			// its Maduro Robusto; see Resolve). Little words are no evidence
			// either way, and search matches words as written.
			again, lines := m == anyWord && sc.termCount[tm.word] > 1 && !particles[ix.words[tm.word]] && !ix.generic[tm.word], false
			for _, p := range ix.postings[tm.word] {
				if again && p.fields == fieldBrand {
					if !lines {
						ix.lineBrandsOf(tm.word, sc)
						lines = true
					}
					if b := ix.docBrand[p.doc]; slices.Contains(sc.lineBrands, b) && int(sc.termCount[tm.word]) > count(ix.brandList[b].words, tm.word) {
						sc.brandHit[tm.word] = true
						continue
					}
				}
				pts := tm.quality * fieldWeight[p.fields&7] / 10
				if sc.wordBest[p.doc] == 0 {
					sc.wordDocs = append(sc.wordDocs, p.doc)
				}
				sc.wordBest[p.doc] = max(sc.wordBest[p.doc], pts)
				if p.fields&fieldBrand != 0 {
					sc.brandHit[tm.word] = true
				}
			}
			if sc.brandHit[tm.word] {
				sc.brandAt = append(sc.brandAt, wordAt{tm.word, i})
			}
		}
		for _, d := range sc.wordDocs {
			if w.optional {
				// Points where it matches, nothing where it does not.
				if sc.matched[d] == 0 && sc.points[d] == 0 {
					sc.touched = append(sc.touched, d)
				}
				sc.points[d] += sc.wordBest[d]
				if sc.masked {
					sc.mask[d] |= 1 << min(i, 63)
				}
				sc.wordBest[d] = 0
				continue
			}
			// Search keeps only cigars that matched every word so far.
			if m == anyWord || int(sc.matched[d]) == required {
				if sc.matched[d] == 0 && sc.points[d] == 0 {
					sc.touched = append(sc.touched, d)
				}
				sc.points[d] += sc.wordBest[d]
				sc.matched[d]++
				if sc.masked {
					sc.mask[d] |= 1 << min(i, 63)
				}
			}
			sc.wordBest[d] = 0
		}
		sc.wordDocs = sc.wordDocs[:0]
		if !w.optional {
			required++
		}
	}
	// A brand's words are the same in each of its cigars: decide once per brand
	// whether the query named it.
	for bi, b := range ix.brandList {
		sc.brandAll[bi] = allHit(b.words, sc) || anyHit(ix.brandDistinct[bi], sc)
		sc.brandFull[bi] = sc.brandAll[bi] && ix.fullHit(b.words, sc)
		sc.aliasNamed[bi] = false
		for _, ws := range b.aliases {
			if len(ws) > 0 && allHit(ws, sc) {
				sc.aliasNamed[bi] = true
				break
			}
		}
	}
	return required
}

func anyHit(ws []int32, sc *scratch) bool {
	for _, w := range ws {
		if sc.brandHit[w] {
			return true
		}
	}
	return false
}

// fullHit says whether the query writes a brand's name (ws): its words in
// order, a particle or a connector between them allowed, particles optional
// ("Romeo Julieta", "Kestrel and Finch"). "Corsario Serie 5 Gran Robusto"
// does not write Gran Corsario's name: its "Gran" is the vitola's.
func (ix *Index) fullHit(ws []int32, sc *scratch) bool {
	var ends uint64 // positions where the name written so far may end
	started := false
	for _, w := range ws {
		var at uint64
		for _, x := range sc.brandAt {
			if x.word == w {
				at |= 1 << min(x.pos, 63)
			}
		}
		switch {
		case at == 0 && particles[ix.words[w]]:
			continue
		case at == 0:
			return false
		case !started:
			ends, started = at, true
		default:
			if ends = (ends<<1 | ends<<2) & at; ends == 0 {
				return false
			}
		}
	}
	return started
}

// lineBrandsOf gathers in sc.lineBrands the brands with a cigar whose name
// holds word w.
func (ix *Index) lineBrandsOf(w int32, sc *scratch) {
	sc.lineBrands = sc.lineBrands[:0]
	for _, p := range ix.postings[w] {
		if b := ix.docBrand[p.doc]; p.fields&fieldName != 0 && !slices.Contains(sc.lineBrands, b) {
			sc.lineBrands = append(sc.lineBrands, b)
		}
	}
}

// mentions says whether the query mentions word w of the name of a cigar of
// brand entry bi: some query word matched it, and when the query names the
// brand in full (brandFull), more of them than the brand's name holds w, as
// a word written once for the brand's name is the brand's ("Kestrel & Finch
// Robusto" does not mention the Kestrel line; "Kestrel & Finch Kestrel
// Robusto" and "Kestrel Robusto" do).
func (ix *Index) mentions(w, bi int32, sc *scratch) bool {
	n := int(sc.termCount[w])
	if n == 0 || !sc.brandFull[bi] {
		return n > 0
	}
	return n > count(ix.brandList[bi].words, w)
}

// count is how many times ws holds w.
func count(ws []int32, w int32) int {
	n := 0
	for _, x := range ws {
		if x == w {
			n++
		}
	}
	return n
}

func allHit(ws []int32, sc *scratch) bool {
	for _, w := range ws {
		if !sc.brandHit[w] {
			return false
		}
	}
	return true
}

// kept says whether a document the words reached is a result: of the brand
// asked for, and in search matching every word.
func (ix *Index) kept(di int32, brandID string, m mode, required int, sc *scratch) bool {
	return (m != allWords || int(sc.matched[di]) == required) &&
		(brandID == "" || ix.brandList[ix.docBrand[di]].id == brandID)
}

// score is a collected document's hit.
func (ix *Index) score(di int32, required int, sc *scratch) Hit {
	points, distinct, named := ix.points(di, required, sc)
	d, bi := &ix.docs[di], ix.docBrand[di]
	return Hit{Cigar: d.cigar, Brand: d.brand, Score: int(points), matchedAll: int(sc.matched[di]) == required,
		unmatchedDistinct: distinct, brandNamed: sc.brandAll[bi] || named || sc.aliasNamed[bi]}
}

// points is a collected document's score, with the distinctive words of its
// name the query left out and whether it named one of the cigar's aliases.
func (ix *Index) points(di int32, required int, sc *scratch) (points int32, distinct int, named bool) {
	points = sc.points[di] + missingWordPoints*int32(required-int(sc.matched[di]))
	// A cigar alias the text names in full stands for the whole name.
	d := &ix.docs[di]
	named = ix.cigarAliasNamed(di, sc)
	if !named {
		// A derived word the query matched stands for the words it is made
		// of.
		covered := ix.derivedCover(d, sc)
		bi := ix.docBrand[di]
		full := sc.brandFull[bi] // when not, a word matched is mentioned
		for j, nw := range ix.nameFlat[ix.nameOff[di]:ix.nameOff[di+1]] {
			switch {
			case covered>>j&1 == 1 || sc.termCount[nw] > 0 && (!full || ix.mentions(nw, bi, sc)):
			case ix.generic[nw]:
				points += unmatchedGeneric
			default:
				points += unmatchedNamePoints
				distinct++
			}
		}
	}
	if sc.brandAll[ix.docBrand[di]] || named {
		points += brandBonus
	}
	return points, distinct, named
}

// derivedCover is the words of a document's name (bit j: its j-th word) that
// derived words the query matched stand for.
func (ix *Index) derivedCover(d *doc, sc *scratch) uint32 {
	var covered uint32
	if !sc.derivedSeen {
		return 0
	}
	for _, s := range d.derived {
		if sc.termCount[s.word] > 0 {
			covered |= s.cover
		}
	}
	return covered
}

// upperBound is the most a collected document can score: its words' points
// and the brand bonus, were no word of its name left unmatched.
func (ix *Index) upperBound(di int32, required int, sc *scratch) int32 {
	b := int32(sc.points[di]) + missingWordPoints*int32(required-int(sc.matched[di]))
	if sc.brandAll[ix.docBrand[di]] || ix.docHasAlias[di] {
		b += brandBonus
	}
	return b
}

// top returns the k best results that keep passes, best first, scoring only
// the documents that can rank among them: a histogram of the score bounds
// gives the bound T above which k documents lie; those are scored, and then
// the ones whose bound reaches the k-th score found. A document whose bound is
// under the k-th score cannot displace it, so the result is that of scoring
// all and sorting.
func (ix *Index) top(required int, brandID string, m mode, k int, keep func(Hit) bool, sc *scratch) []Hit {
	lo, hi := int32(0), int32(0)
	for _, di := range sc.touched {
		if !ix.kept(di, brandID, m, required, sc) {
			continue
		}
		b := ix.upperBound(di, required, sc)
		if len(sc.cand) == 0 {
			lo, hi = b, b
		}
		lo, hi = min(lo, b), max(hi, b)
		sc.cand = append(sc.cand, di)
		sc.bound = append(sc.bound, b)
	}
	if len(sc.cand) == 0 || k <= 0 {
		return nil
	}
	sc.counts = slices.Grow(sc.counts[:0], int(hi-lo)+1)[:int(hi-lo)+1]
	clear(sc.counts)
	for _, b := range sc.bound {
		sc.counts[b-lo]++
	}
	threshold, above := lo, 0
	for v := hi; v >= lo; v-- {
		above += int(sc.counts[v-lo])
		if above >= k {
			threshold = v
			break
		}
	}
	// Ties are broken by ID, which for documents in ID order is by position: a
	// hit is built only for a document entering the window.
	type ranked struct{ score, di int32 }
	better := func(a, b ranked) bool { return a.score > b.score || a.score == b.score && ix.idLess(a.di, b.di) }
	win, rank := make([]Hit, 0, k+1), make([]ranked, 0, k+1)
	add := func(di int32) {
		p, _, _ := ix.points(di, required, sc)
		r := ranked{p, di}
		if len(win) == k && !better(r, rank[k-1]) {
			return
		}
		h := ix.score(di, required, sc)
		if keep != nil && !keep(h) {
			return
		}
		j := sort.Search(len(rank), func(j int) bool { return better(r, rank[j]) })
		win, rank = slices.Insert(win, j, h), slices.Insert(rank, j, r)
		if len(win) > k {
			win, rank = win[:k], rank[:k]
		}
	}
	for i, di := range sc.cand {
		if sc.bound[i] >= threshold {
			add(di)
		}
	}
	floor := lo // with fewer than k kept, every bound can still rank
	if len(win) == k {
		floor = rank[k-1].score
	}
	if floor < threshold {
		for i, di := range sc.cand {
			if b := sc.bound[i]; b < threshold && b >= floor {
				add(di)
			}
		}
	}
	return win
}

// idLess says whether document a's cigar ID sorts before document b's. The
// first sorted documents are in ID order; ones Apply appended are compared by
// ID.
func (ix *Index) idLess(a, b int32) bool {
	if a < ix.sorted && b < ix.sorted {
		return a < b
	}
	return ix.docs[a].cigar.ID < ix.docs[b].cigar.ID
}

// cigarAliasNamed reports whether the query matched every distinctive word of
// one of document di's own aliases ("PSD4", "Epi No. 2").
func (ix *Index) cigarAliasNamed(di int32, sc *scratch) bool {
	if !sc.aliasSeen {
		return false
	}
	all := true
	for _, w := range ix.aliasFlat[ix.aliasOff[di]:ix.aliasOff[di+1]] {
		switch {
		case w == aliasEnd && all:
			return true
		case w == aliasEnd:
			all = true
		case sc.termCount[w] == 0:
			all = false
		}
	}
	return false
}

// genericWords are words of cigar names people leave out without meaning another
// cigar: "Montecristo No 2" means the Classic No. 2. ("Original" is not one: it
// names a line beside others, as My Father's Original.)
var genericWords = map[string]bool{
	"classic": true, "series": true, "serie": true, "collection": true,
	"edition": true, "edicion": true, "line": true, "linea": true, "no": true,
	"de": true, "del": true, "la": true, "el": true, "y": true, "the": true, "of": true,
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
			if ix.has(words[i]+words[i+1]) && !(ix.has(words[i]) && ix.has(words[i+1])) {
				joined := words[i] + words[i+1]
				out = append(out, joined)
				i++
				continue
			}
		}
		out = append(out, words[i])
	}
	return out
}
