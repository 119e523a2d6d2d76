package recognize

import "github.com/vitolahq/vitola/subgraphs/matching/fingerprint"

// SecondLook is every candidate the second look scores, before the limit
// cuts them (tests).
func (s *Snapshot) SecondLook(views []*fingerprint.Fingerprint) []Candidate {
	return s.candidates(views, true, map[int]fingerprint.Scores{})
}
