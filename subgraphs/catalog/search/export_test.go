package search

// RankAll scores every cigar a query reaches and sorts them (the reference the
// top-k selection must equal): search's words when resolve is false, resolve's
// otherwise.
func (ix *Index) RankAll(text string, resolve bool) []Hit {
	words, m := ix.searchWords(text), allWords
	if resolve {
		words, m = ix.weigh(ix.resolveWords(text)), anyWord
	}
	hits := ix.run(words, "", m)
	sortHits(hits)
	return hits
}
