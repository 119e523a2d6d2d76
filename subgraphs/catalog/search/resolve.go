package search

import (
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
// cigar's name and costing nothing where they do not.
//
// The first candidate is resolved only when all of these hold:
//   - its brand is known: named in the text (or by an alias), by the hint, or
//     by one of the cigar's own aliases the text names in full ("PSD4");
//   - it matches every word of the text that is not optional (typos allowed);
//   - no other cigar fits as well: either it is the only cigar matching every
//     word, or the text mentions every distinctive word of its name (generic
//     words like "Classic" or "Series" may be left out) and of no other cigar
//     matching every word (a cigar alias named in full mentions them all),
//     so "Montecristo No 2" is the Classic No. 2 while
//     "Padrón Robusto" stays unresolved when Padrón has several robustos;
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
	words := ix.resolveWords(text)
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
	resolved = ix.clearlyFirst(top[0], required, brandID, sc) && (brandID != "" || top[0].brandNamed) &&
		(len(top) == 1 || top[0].Score > top[1].Score)
	if len(top) > limit {
		top = top[:limit]
	}
	return top, resolved
}

// clearlyFirst applies the matching rules of Resolve to the first candidate
// against all the others of the brand asked for: only those matching every
// word are scored.
func (ix *Index) clearlyFirst(first Hit, required int, brandID string, sc *scratch) bool {
	if !first.matchedAll {
		return false
	}
	self := ix.docOf[first.Cigar.ID]
	for _, di := range sc.touched {
		if int(sc.matched[di]) != required || di == self || !ix.kept(di, brandID, anyWord, required, sc) {
			continue
		}
		// Another cigar matches every word: the first must name more.
		if first.unmatchedDistinct > 0 {
			return false
		}
		if _, distinct, _ := ix.points(di, required, sc); distinct == 0 {
			return false
		}
	}
	return true
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
