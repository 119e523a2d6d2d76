package search

import (
	"maps"
	"reflect"
	"slices"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// How Apply changes a snapshot: copy on write. The next snapshot shares with
// the one it comes from what it does not change (the posting lists of the
// words untouched, cigars, brands, rendered documents) and copies what it
// does (the per-document arrays it appends to, the lists of the words
// touched), so that one stays whole for the queries still running on it:
//   - a changed cigar is indexed again at a new position after the others, and
//     its postings at its former position are taken out of the lists of its
//     former words (those lists are copied; so is the list of each word a new
//     document holds). Nothing else names the former position: it is dead
//     until Compact;
//   - words are only added, so a word's ID never changes; a word no document
//     holds any more is not a word of the index (has), as after a Build;
//   - ties are broken by ID: by position among the documents Build sorted, by
//     comparing IDs where an appended one is involved (idLess).
//
// The result of every query is the one Build over the same catalog gives
// (TestApplyEqualsBuild holds it to that).

// rebuildShare: when more than 1/rebuildShare of the cigars are to be indexed
// again (a brand change that touches many cigars, a large import), Apply
// builds the next snapshot anew from memory, which then costs about the same.
const rebuildShare = 4

// compactShare: once more than 1/compactShare of the documents have been
// appended since the last build, the snapshot is worth compacting (Compact)
// in the background: dead positions hold memory and appended ones break ties
// by comparing IDs.
const compactShare = 10

// Apply returns the next snapshot: this one with brands and cigars upserted
// (what the store says changed since the version this one holds). A brand's
// change applies to every cigar of the brand. A brand or cigar equal to the
// one held changes nothing; a cigar of a brand the index does not hold is
// left out, as Build leaves it out. The receiver is not modified.
func (ix *Index) Apply(brands []*catalog.Brand, cigars []*catalog.Cigar) *Index {
	byID := ix.byID
	var changedBrand map[string]bool
	for _, b := range brands {
		if old := byID[b.ID]; old != nil && reflect.DeepEqual(old, b) {
			continue
		}
		if changedBrand == nil {
			byID, changedBrand = maps.Clone(ix.byID), map[string]bool{}
		}
		byID[b.ID] = b
		changedBrand[b.ID] = true
	}
	todo := map[string]*catalog.Cigar{}
	for _, c := range cigars {
		if i, ok := ix.docOf[c.ID]; ok && !changedBrand[c.BrandID] && reflect.DeepEqual(ix.docs[i].cigar, c) {
			continue
		}
		todo[c.ID] = c
	}
	if len(changedBrand) > 0 {
		// Every cigar of a changed brand holds the brand's words: index it again.
		of := make([]bool, len(ix.brandList))
		for id := range changedBrand {
			if bi, ok := ix.brandPos[id]; ok {
				of[bi] = true
			}
		}
		for i, bi := range ix.docBrand {
			if c := ix.docs[i].cigar; of[bi] && ix.docOf[c.ID] == int32(i) {
				if _, ok := todo[c.ID]; !ok {
					todo[c.ID] = c
				}
			}
		}
	}
	if len(todo) == 0 && changedBrand == nil {
		return ix
	}
	if len(todo)*rebuildShare > len(ix.docOf) {
		return ix.rebuild(byID, todo)
	}

	// The per-document arrays are copied once, to their new length (appending
	// to a shared array would write into this snapshot's spare capacity).
	n := len(todo)
	nx := &Index{
		docs: slices.Grow(slices.Clip(ix.docs), n), sorted: ix.sorted,
		words: slices.Clip(ix.words), wordID: maps.Clone(ix.wordID), generic: slices.Clip(ix.generic),
		postings: slices.Clone(ix.postings), byLen: make(map[int][]int32, len(ix.byLen)),
		brands: ix.brands, byID: byID, docOf: maps.Clone(ix.docOf),
		brandList: slices.Clip(ix.brandList), brandPos: maps.Clone(ix.brandPos),
		docBrand: slices.Grow(slices.Clip(ix.docBrand), n), docHasAlias: slices.Grow(slices.Clip(ix.docHasAlias), n),
		nameOff:   slices.Grow(slices.Clip(ix.nameOff), n),
		nameFlat:  slices.Grow(slices.Clip(ix.nameFlat), n*(len(ix.nameFlat)/max(1, len(ix.docs))+1)),
		aliasOff:  slices.Grow(slices.Clip(ix.aliasOff), n),
		aliasFlat: slices.Clip(ix.aliasFlat),
		// addDoc sets flags in place: a copy, not to set this snapshot's.
		aliasWord: slices.Clone(ix.aliasWord),
	}
	if changedBrand != nil {
		nx.brands = brandKeys(byID)
	}
	// Clipped, a word's list is copied on its first append.
	for i, ps := range nx.postings {
		nx.postings[i] = slices.Clip(ps)
	}
	for l, ids := range ix.byLen {
		nx.byLen[l] = slices.Clip(ids)
	}

	// Take the changed cigars' postings out of the lists of their former words.
	gone := map[int32]map[int32]bool{} // word → former positions
	for id := range todo {
		i, ok := ix.docOf[id]
		if !ok {
			continue
		}
		d := &ix.docs[i]
		_, _, _, _, _, fields := docWords(d.cigar, d.brand, func(w string) int32 { return ix.wordID[w] })
		for w := range fields {
			if gone[w] == nil {
				gone[w] = map[int32]bool{}
			}
			gone[w][i] = true
		}
		delete(nx.docOf, id)
	}
	for w, docs := range gone {
		kept := make([]posting, 0, len(ix.postings[w])-len(docs))
		for _, p := range ix.postings[w] {
			if !docs[p.doc] {
				kept = append(kept, p)
			}
		}
		nx.postings[w] = kept
	}

	// Index them again after the others, in ID order.
	for _, id := range slices.Sorted(maps.Keys(todo)) {
		c := todo[id]
		if b := byID[c.BrandID]; b != nil {
			nx.addDoc(c, b)
		}
	}
	for l, ids := range nx.byLen {
		if len(ids) != len(ix.byLen[l]) {
			nx.sortByWord(ids)
		}
	}
	nx.ready(ix)
	return nx
}

// rebuild builds this snapshot's catalog with the brands of byID and the
// cigars of todo upserted anew.
func (ix *Index) rebuild(byID map[string]*catalog.Brand, todo map[string]*catalog.Cigar) *Index {
	cigars := make([]*catalog.Cigar, 0, len(ix.docOf)+len(todo))
	for id, i := range ix.docOf {
		if _, ok := todo[id]; !ok {
			cigars = append(cigars, ix.docs[i].cigar)
		}
	}
	for _, c := range todo {
		cigars = append(cigars, c)
	}
	return Build(slices.Collect(maps.Values(byID)), cigars)
}

// Compact builds this snapshot's catalog anew: the same answers, without the
// dead positions and appended documents of Apply.
func (ix *Index) Compact() *Index { return ix.rebuild(ix.byID, nil) }

// Fragmented says whether enough has been applied since the last build for
// Compact to be worth its cost.
func (ix *Index) Fragmented() bool {
	return (len(ix.docs)-int(ix.sorted))*compactShare > len(ix.docOf)
}
