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
// The first candidate is resolved only when all of these hold:
//   - it matches every word of the text (typos allowed; words such as "cigar" or
//     "box" are ignored);
//   - the text mentions every distinctive word of its name: generic words like
//     "Classic" or "Series" may be left out, anything else may not, so "Padrón
//     Robusto" stays unresolved when Padrón has several robustos;
//   - it leads the second candidate by at least ResolveMargin points.
func (ix *Index) Resolve(text, brandHint string, limit int) (hits []Hit, resolved bool) {
	text = dropFiller(text)
	brandID := ""
	if brandHint != "" {
		if b, ok := ix.fuzzyBrand(brandHint); ok {
			brandID = b.ID
		} else {
			text = brandHint + " " + text
		}
	}
	all := best(ix.run(text, brandID, anyWord), max(limit, 2))
	if len(all) == 0 {
		return nil, false
	}
	top := all[0]
	resolved = top.matchedAll && top.unmatchedDistinct == 0 &&
		(len(all) == 1 || top.Score-all[1].Score >= ResolveMargin)
	if len(all) > limit {
		all = all[:limit]
	}
	return all, resolved
}

// ResolveMargin is the lead (in points) the first candidate needs over the second
// to be resolved: more than one generic word's worth.
const ResolveMargin = 4

// fillerWords are words of listings and OCR that say nothing about which cigar.
var fillerWords = map[string]bool{"cigar": true, "cigars": true, "puro": true, "puros": true, "box": true, "single": true, "pack": true}

func dropFiller(text string) string {
	words := Words(text)
	kept := words[:0]
	for _, w := range words {
		if !fillerWords[w] {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
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
