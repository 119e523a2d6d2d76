package search

import (
	"slices"
	"strings"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Resolve turns imperfect text (a typed name, an OCR of a band, a shop listing)
// into ranked candidates, best first, and says whether the first is clearly the
// one.
//
// Candidates need not match every word: a word the catalog does not know costs
// points instead of excluding the cigar. A brand hint (name or alias, typos
// allowed) keeps only that brand's cigars when it names one, and otherwise joins
// the text.
//
// The text is read the way people write: a numeral is one word however it is
// written ("No. 2", "No 2", "#2", "No. II", "Number 2"); listing words
// ("cigar", "box of 25", "5 pack", "the") and sizes ("50x5", "5 x 50", "52
// ring", "Robusto 50") are optional words, worth points where they match a
// cigar's name and costing nothing where they do not. Initials are joined ("R
// y J" → "ryj"), codes split ("D4" → "d 4"), and the names derived from the
// catalog's own (derive.go: "LFD", "PSD4", "LP9", "898") are words too.
//
// Each other word weighs by what it matches in the catalog (weigh):
//   - a word of the catalog as written (or a derived name) is evidence;
//   - a word that matches only with a typo or as a prefix ("Montechristo",
//     "Epi"; here a word of four letters or more may have a typo more than
//     search allows: "Shot" for "Short", "Edmondu" for "Edmundo")
//     is weaker: it adds points where it matches, but the first candidate
//     need not match it;
//   - a word that matches nothing ("review", "price") is noise, and ignored.
//
// A word of a brand's name counts once for the brand: where the text writes
// the name (its words in order, particles optional), the words that make it
// up are the brand's, and a word the name consumes mentions a cigar's name
// only when the text writes it again. Of Kestrel & Finch's Kestrel, Finch
// Reserva and Nocturne Robustos, "Kestrel & Finch Robusto" names none
// (unresolved), while "Kestrel & Finch Kestrel Robusto" and "Kestrel
// Robusto" (no full name: the word is both the brand's and the line's) name
// the Kestrel; "Gran Corsario Serie 5 Robusto" is the Robusto, not the Gran
// Robusto beside it. Written again, such a word is the line's only: a cigar
// of that brand whose name lacks it does not match it ("Gran Corsario Serie
// 5 Gran Robusto" is the Gran Robusto).
//
// The first candidate is resolved only when all of these hold:
//   - its brand is known: named in the text (in full, by an alias, by a
//     derived initialism, or by a word of its name no other brand has:
//     "Fuente"), by the hint, or by one of the cigar's own aliases the text
//     names in full ("PSD4"); or else the text names the cigar itself: every
//     distinctive word of its name, two of them at least ("Hemingway Best
//     Seller");
//   - it matches every word of evidence, but for at most one word that is no
//     number and names nothing of its brand, nor any brand ("Fuente
//     Hemingway Short Story tubos": Fuente has no Tubos);
//   - no other cigar matching those words fits as well: the text mentions
//     every distinctive word of the first's name (generic words like "Classic"
//     or "Series" may be left out; a cigar alias or a derived name stands for
//     the words it names) but leaves out one of the other's, or the first's
//     left-out words are the other's too ("Behike 54" leaves out "BHK", which
//     every Behike has, and the BHK 52 leaves out "52" besides). So
//     "Montecristo No 2" is the Classic No. 2, "Padrón 1964 Exclusivo" the
//     1964 Anniversary Series Exclusivo (not its Natural), while "Padrón
//     Robusto" stays unresolved when Padrón has several robustos;
//   - it scores strictly higher than the second.
func (ix *Index) Resolve(text, brandHint string, limit int) (hits []Hit, resolved bool) {
	brandID := ""
	if brandHint != "" {
		if b, ok := ix.fuzzyBrand(brandHint); ok {
			brandID = b.ID
		} else {
			text = brandHint + " " + text
		}
	}
	words := ix.weigh(ix.resolveWords(text))
	if len(words) == 0 || len(ix.docs) == 0 {
		return nil, false
	}
	sc := ix.scratch.Get().(*scratch)
	defer func() { sc.reset(); ix.scratch.Put(sc) }()
	required := ix.collect(words, anyWord, sc)
	top := ix.top(required, brandID, anyWord, max(limit, 2), nil, sc)
	if len(top) == 0 {
		return nil, false
	}
	resolved = (len(top) == 1 || top[0].Score > top[1].Score) && ix.clearlyFirst(top[0], words, brandID, sc)
	if len(top) > limit {
		top = top[:limit]
	}
	return top, resolved
}

// weigh says of each word of a resolve query what it matches in the catalog
// (see Resolve): a word matching nothing as written is tried split in two
// words of the catalog ("sungrown"), then as a prefix ("Epi"); a word still
// matching nothing becomes optional, noise.
func (ix *Index) weigh(words []qword) []qword {
	out := make([]qword, 0, len(words))
	for i, w := range words {
		last := i == len(words)-1
		if w.optional {
			out = append(out, w)
			continue
		}
		tms := ix.live(ix.matches(w.text, last))
		// Little words ("de", "the") and generic ones are no evidence either way.
		little := particles[w.text] || genericWords[w.text]
		if w.strong = !little && slices.ContainsFunc(tms, func(tm termMatch) bool { return tm.quality >= qualityDerived }); w.strong || little {
			out = append(out, w)
			continue
		}
		if len(tms) == 0 {
			if parts := ix.splitCompound(w.text); parts != nil {
				for _, p := range parts {
					out = append(out, qword{text: p, strong: true})
				}
				continue
			}
			if !last && len(w.text) >= 3 && !isNumber(w.text) {
				w.prefix = true
				tms = ix.live(ix.matches(w.text, true))
			}
			if len(tms) == 0 {
				if head, tail, ok := ix.splitInitials(w.text); ok {
					out = append(out, qword{text: head, initial: true, strong: true}, qword{text: tail, strong: true})
					continue
				}
			}
			if len(tms) == 0 && len(w.text) >= 4 && !hasDigit(w.text) {
				w.prefix, w.loose = false, true
				tms = ix.live(ix.looseMatches(w.text))
			}
		}
		w.optional = len(tms) == 0
		out = append(out, w)
	}
	return out
}

// splitInitials reads a word the index does not know as a brand's
// initialism (or its initial, for a brand of one word) before a derived word
// of one of the brand's names: "psd4" → "p" + "sd4" (Partagás Serie D No.
// 4), "husw" → "hu" + "sw" (H. Upmann Sir Winston). The longest initialism
// wins.
func (ix *Index) splitInitials(w string) (head, tail string, ok bool) {
	for i := len(w) - 2; i >= 1; i-- {
		head, tail = w[:i], w[i:]
		id, ok := ix.wordID[derivedMark+tail]
		if !ok {
			continue
		}
		for _, tm := range ix.initialMatches(head) {
			if ix.share(id, tm.word) {
				return head, tail, true
			}
		}
	}
	return "", "", false
}

// share says whether a document holds both words. Posting lists are in
// document order.
func (ix *Index) share(a, b int32) bool {
	pa, pb := ix.postings[a], ix.postings[b]
	if len(pa) > len(pb) {
		pa, pb = pb, pa
	}
	for _, p := range pa {
		if _, found := slices.BinarySearchFunc(pb, p.doc, func(q posting, d int32) int { return int(q.doc - d) }); found {
			return true
		}
	}
	return false
}

// initialMatches finds the brands a query word names as an initialism
// (derived, "hu") or as the initial of a brand of one word ("p"), for
// splitInitials.
func (ix *Index) initialMatches(q string) []termMatch {
	var out []termMatch
	if id, ok := ix.wordID[initialMark+q]; ok && len(ix.postings[id]) > 0 {
		out = append(out, termMatch{id, qualityDerived})
	}
	if id, ok := ix.wordID[derivedMark+q]; ok && len(ix.postings[id]) > 0 && ix.postings[id][0].fields&fieldBrand != 0 {
		out = append(out, termMatch{id, qualityDerived})
	}
	return out
}

// live keeps the matches of words some document holds.
func (ix *Index) live(tms []termMatch) []termMatch {
	for _, tm := range tms {
		if len(ix.postings[tm.word]) == 0 {
			return slices.DeleteFunc(slices.Clone(tms), func(tm termMatch) bool { return len(ix.postings[tm.word]) == 0 })
		}
	}
	return tms
}

// clearlyFirst applies the rules of Resolve to the first candidate against
// every other cigar (of the brand asked for) that matches the same words of
// evidence.
func (ix *Index) clearlyFirst(first Hit, words []qword, brandID string, sc *scratch) bool {
	self := ix.docOf[first.Cigar.ID]
	var needed uint64
	missed := 0
	for i, w := range words {
		bit := uint64(1) << min(i, 63)
		if w.optional || !w.strong {
			continue
		}
		if sc.mask[self]&bit != 0 {
			needed |= bit
			continue
		}
		if missed++; missed > 1 || hasDigit(w.text) || ix.contradicts(w, i == len(words)-1, ix.docBrand[self], sc) {
			return false
		}
	}
	left, seen := ix.leftOut(self, sc)
	if brandID == "" && !first.brandNamed && len(seen) < 2 {
		return false
	}
	name := ix.nameFlat[ix.nameOff[self]:ix.nameOff[self+1]]
	for _, di := range sc.touched {
		if di == self || sc.mask[di]&needed != needed || !ix.kept(di, brandID, anyWord, 0, sc) {
			continue
		}
		// The other misses a word the first matches (a typo, a prefix, a
		// size): the text is the first's.
		if sc.mask[self]&^sc.mask[di] != 0 {
			continue
		}
		theirs := ix.nameFlat[ix.nameOff[di]:ix.nameOff[di+1]]
		if !containsAll(theirs, left) || !ix.leavesOutOther(di, name, sc) {
			return false
		}
	}
	return true
}

func containsAll(set, ws []int32) bool {
	for _, w := range ws {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// leftOut returns the distinctive words of a collected document's name the
// query did not mention (none when it named one of the cigar's aliases; a
// derived word mentions the words it stands for), and those it did.
func (ix *Index) leftOut(di int32, sc *scratch) (left, seen []int32) {
	d := &ix.docs[di]
	name := ix.nameFlat[ix.nameOff[di]:ix.nameOff[di+1]]
	if ix.cigarAliasNamed(di, sc) {
		return nil, slices.DeleteFunc(slices.Clone(name), func(w int32) bool { return ix.generic[w] })
	}
	covered := ix.derivedCover(d, sc)
	for j, nw := range name {
		switch {
		case ix.generic[nw]:
		case covered>>j&1 == 1 || ix.mentions(nw, ix.docBrand[di], sc):
			seen = append(seen, nw)
		default:
			left = append(left, nw)
		}
	}
	return left, seen
}

// leavesOutOther says whether the query left out a distinctive word of
// document di's name that the first candidate's name (name) has not, as
// leftOut would find it, without gathering them.
func (ix *Index) leavesOutOther(di int32, name []int32, sc *scratch) bool {
	d := &ix.docs[di]
	if ix.cigarAliasNamed(di, sc) {
		return false
	}
	covered := ix.derivedCover(d, sc)
	for j, nw := range ix.nameFlat[ix.nameOff[di]:ix.nameOff[di+1]] {
		if !ix.generic[nw] && covered>>j&1 == 0 && !ix.mentions(nw, ix.docBrand[di], sc) && !slices.Contains(name, nw) {
			return true
		}
	}
	return false
}

// spreadBrands: a word of the names of this many brands' cigars names a
// kind of cigar (a vitola, a wrapper), not a brand's own product.
const spreadBrands = 3

// contradicts says whether a word of evidence the first candidate (of brand
// entry bi) does not match speaks against it: it names a brand the text
// names, or a cigar of the first's brand, or a kind of cigar ("Fuente OpusX
// Lancero" asks for a Lancero OpusX has not). A word of one or two other
// brands' names does not ("Tubos" after a Romeo y Julieta: Romeo y Julieta has
// no Tubos).
func (ix *Index) contradicts(w qword, last bool, bi int32, sc *scratch) bool {
	id := ix.brandList[bi].id
	var others []string
	for _, tm := range ix.matches(w.text, last || w.prefix) {
		for _, p := range ix.postings[tm.word] {
			b := ix.docBrand[p.doc]
			// (w is strong: matched as written, never loosely.)
			switch be := ix.brandList[b].id; {
			case be == id:
				return true
			case p.fields&fieldBrand != 0 && (sc.brandAll[b] || sc.aliasNamed[b]):
				return true
			case tm.quality >= qualityDerived && !slices.Contains(others, be):
				// The word as written, not its typos ("Tubos" is not "Tubo").
				if others = append(others, be); len(others) >= spreadBrands {
					return true
				}
			}
		}
	}
	return false
}

// fuzzyBrand finds the brand a hint names: exactly (name or alias), or with the
// typo budget of its words.
func (ix *Index) fuzzyBrand(hint string) (*catalog.Brand, bool) {
	if b, ok := ix.Brand(hint); ok {
		return b, true
	}
	hw := Words(hint)
	var found *catalog.Brand
	for key, b := range ix.brands {
		kw := strings.Fields(key)
		if len(kw) != len(hw) {
			continue
		}
		ok := true
		for i := range kw {
			if kw[i] != hw[i] && distance(hw[i], kw[i], allowedTypos(hw[i])) > allowedTypos(hw[i]) {
				ok = false
				break
			}
		}
		if ok {
			if found != nil && found.ID != b.ID {
				return nil, false // two brands fit: no hint
			}
			found = b
		}
	}
	return found, found != nil
}
