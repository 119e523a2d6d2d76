// Package recognize answers "which catalog cigar wears this band?" from stored
// evidence: a snapshot of every evidence fingerprint with two indexes, one
// over their vectors and one over their keypoints. A query's views each
// shortlist the evidence nearest by vector and the evidence whose keypoints
// most agree on one placement in the photo; the shortlist is then scored in
// full (the keypoints' inliers, colours, layout, hashes, text) and grouped
// by cigar. No model inference, no credits.
package recognize

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/index"
	"github.com/vitolahq/vitola/subgraphs/matching/keyindex"
)

// Shortlists: how many evidence items nearest by vector, and how many with
// the most placement votes of their keypoints, each view scores in full.
const (
	VectorShortlist = 64
	KeyShortlist    = 16
)

// A second look: when no candidate has WidenBelow inliers (identify names
// nothing then), the keypoints are looked up again with buckets up to
// Widen times as crowded as the first look allows (keyindex), and the
// leading brand's other lines are scored (siblings). A small,
// blurred or half-covered band's keypoints are often of the common shapes
// the first look skips: on held-out bandgen photos at the strongest level
// this put the line among the first five on 82% of them instead of 75%,
// and first on 63% instead of 60%, the milder levels unchanged. It costs a
// photo without a clear match a few times the lookup, so it is only taken
// in indexes of up to WidenUpTo evidence items.
const (
	WidenBelow = 20
	Widen      = 16
	WidenUpTo  = 2048
)

// mostInliers is the most inliers of any candidate.
func mostInliers(cs []Candidate) float64 {
	best := 0.0
	for _, c := range cs {
		best = max(best, c.Scores.Inliers)
	}
	return best
}

// keyDistance is the most bits (of 256) two keypoints paired through the
// index may differ by.
const keyDistance = 64

// Limits of a recognition's candidates.
const (
	DefaultLimit = 5
	MaxLimit     = 20
)

type entry struct {
	id, cigarID string
	fp          *fingerprint.Fingerprint
}

// Snapshot is the evidence at one version; it is immutable and safe for
// concurrent queries.
type Snapshot struct {
	entries []entry
	ix      *index.Index
	// keys files the keypoints of the evidence that has them (items refer
	// to entries by position).
	keys *keyindex.Index
	// brands lists the entries of each brand evidence was labelled with.
	brands map[string][]int
	// Skipped counts evidence whose fingerprint could not be read (a format
	// from another version): it is left out, not fatal.
	Skipped int
}

// Build indexes the evidence.
func Build(evidence []*matching.Evidence) *Snapshot { return new(Builder).Build(evidence) }

// Builder builds snapshots one after another, decoding each evidence item's
// fingerprint once: evidence never changes once stored, so a rebuild after an
// addition decodes only what was added.
type Builder struct {
	decoded map[string]*fingerprint.Fingerprint
}

// Build indexes the evidence. Builds must not run concurrently.
func (b *Builder) Build(evidence []*matching.Evidence) *Snapshot {
	next := make(map[string]*fingerprint.Fingerprint, len(evidence))
	s := &Snapshot{brands: map[string][]int{}}
	items := make([]index.Item, 0, len(evidence))
	var keyed []keyindex.Item
	for _, e := range evidence {
		fp, ok := b.decoded[e.ID]
		if !ok {
			fp = new(fingerprint.Fingerprint)
			if err := json.Unmarshal(e.Fingerprint, fp); err != nil || !fingerprint.Readable(fp.Version) || len(fp.Vector) == 0 {
				s.Skipped++
				continue
			}
		}
		next[e.ID] = fp
		items = append(items, index.Item{Ref: len(s.entries), Vec: fp.Vector})
		if fp.Keypoints.Len() > 0 {
			keyed = append(keyed, keyindex.Item{Ref: len(s.entries), Desc: fp.Keypoints.Descriptors()})
		}
		if fp.Label != nil && fp.Label.Brand != "" {
			s.brands[fp.Label.Brand] = append(s.brands[fp.Label.Brand], len(s.entries))
		}
		s.entries = append(s.entries, entry{id: e.ID, cigarID: e.CigarID, fp: fp})
	}
	b.decoded = next
	s.ix = index.Build(items)
	s.keys = keyindex.Build(keyed)
	return s
}

// Len is the number of evidence items served.
func (s *Snapshot) Len() int { return len(s.entries) }

// Candidate is a cigar the band may be, with the evidence that matched best.
type Candidate struct {
	CigarID string
	// Score is the best evidence's score, 0..1 (see score).
	Score float64
	// EvidenceID is that evidence; Scores its per-kind scores, averaged over
	// the views.
	EvidenceID string
	Scores     fingerprint.Scores
	// Keyed says whether the evidence and a view had keypoints to compare
	// (Scores.Inliers; not so for fingerprints of "vitola-band-2").
	Keyed bool
}

// Recognize returns up to limit candidates for a band seen in views, best first
// (ties by cigar ID, so answers are stable).
func (s *Snapshot) Recognize(views []*fingerprint.Fingerprint, limit int) ([]Candidate, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("limit must be 1 to %d", MaxLimit)
	}
	if len(views) == 0 || len(s.entries) == 0 {
		return []Candidate{}, nil
	}
	// The rest of the comparison does not change with the look: each
	// evidence item is compared with the views once.
	compared := map[int]fingerprint.Scores{}
	out := s.candidates(views, false, compared)
	if best := mostInliers(out); best < WidenBelow && s.keys.Len() <= WidenUpTo {
		// Nothing clearly found: look again, crowded buckets and the
		// leading brand's other lines too.
		out = s.candidates(views, true, compared)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Score > out[j].Score || (out[i].Score == out[j].Score && out[i].CigarID < out[j].CigarID)
	})
	return out[:min(limit, len(out))], nil
}

// candidates scores the evidence the views shortlist, one candidate a cigar
// (its best evidence), in no order. Every view shortlists; each
// shortlisted evidence is scored against every view, so that several photos
// of one band agree or disagree together. The second look looks the
// keypoint index up with buckets up to Widen times as crowded as it allows
// (keyindex.PairsWidened), and scores the leading brand's other lines too
// (siblings); compared holds the rest of each evidence's comparison,
// filled as it goes.
func (s *Snapshot) candidates(views []*fingerprint.Fingerprint, second bool, compared map[int]fingerprint.Scores) []Candidate {
	widen := 1
	if second {
		widen = Widen
	}
	seen := map[int]bool{}
	var shortlist []int
	add := func(ref int) {
		if !seen[ref] {
			seen[ref] = true
			shortlist = append(shortlist, ref)
		}
	}
	for _, v := range views {
		for _, h := range s.ix.Nearest(v.Vector, VectorShortlist) {
			add(h.Ref)
		}
	}
	// pairs[k][ref] are view k's keypoint pairs with evidence ref, as the
	// keypoint index found them.
	pairs := make([]map[int][]fingerprint.KeyPair, len(views))
	for k, v := range views {
		if v.Keypoints.Len() == 0 || s.keys.Len() == 0 {
			continue
		}
		pairs[k] = map[int][]fingerprint.KeyPair{}
		type voted struct{ ref, votes int }
		var vs []voted
		for _, c := range s.keys.PairsWidened(v.Keypoints.Descriptors(), keyDistance, widen) {
			pairs[k][c.Ref] = c.Pairs
			if n := fingerprint.PlacementVotes(v.Keypoints, s.entries[c.Ref].fp.Keypoints, c.Pairs); n > 0 {
				vs = append(vs, voted{c.Ref, n})
			}
		}
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].votes > vs[j].votes })
		for _, x := range vs[:min(len(vs), KeyShortlist)] {
			add(x.ref)
		}
	}
	best := map[string]Candidate{}
	top, topScore := -1, 0.0 // the best scored entry
	scoreRef := func(ref int) {
		e := s.entries[ref]
		scores, ok := compared[ref]
		if !ok {
			scores = fingerprint.CompareMany(views, e.fp)
			compared[ref] = scores
		}
		c := Candidate{CigarID: e.cigarID, EvidenceID: e.id, Scores: scores}
		for k, v := range views {
			if pairs[k] == nil || e.fp.Keypoints.Len() == 0 {
				continue
			}
			c.Keyed = true
			if ps := pairs[k][ref]; len(ps) > 0 {
				c.Scores.Inliers += float64(fingerprint.VerifyPairs(v.Keypoints, e.fp.Keypoints, ps).Inliers) / float64(len(views))
			}
		}
		c.Scores.Keypoints = fingerprint.KeypointScore(c.Scores.Inliers)
		c.Score = score(c)
		if prev, ok := best[e.cigarID]; !ok || c.Score > prev.Score || (c.Score == prev.Score && c.EvidenceID < prev.EvidenceID) {
			best[e.cigarID] = c
		}
		if top < 0 || c.Score > topScore {
			top, topScore = ref, c.Score
		}
	}
	for _, ref := range shortlist {
		scoreRef(ref)
	}
	if second && top >= 0 {
		for _, ref := range s.siblings(top, seen, pairs) {
			scoreRef(ref)
		}
	}
	out := make([]Candidate, 0, len(best))
	for _, c := range best {
		out = append(out, c)
	}
	return out
}

// BrandSiblings is how many evidence items of the leading brand, beyond
// those the shortlists found, are scored (siblings).
const BrandSiblings = 16

// siblings are the evidence items of the brand of top (an entry) that were
// not scored (seen), those with the most keypoint pairs first, up to
// BrandSiblings. The brand is the one evidence was labelled with when it
// was added. A blurred or half-covered band's best candidate is often
// another line of its brand, and the line it shows may have been in
// neither shortlist: the lines share most of a design, and the sibling took
// the places. Scored, it can be named (when it wins), weighed against the
// first (identify's linesClose), and listed among the brand's lines that
// lead identify's suggestions (identify's brandLeads).
func (s *Snapshot) siblings(top int, seen map[int]bool, pairs []map[int][]fingerprint.KeyPair) []int {
	label := s.entries[top].fp.Label
	if label == nil || label.Brand == "" {
		return nil
	}
	var out []int
	for _, r := range s.brands[label.Brand] {
		if !seen[r] {
			out = append(out, r)
		}
	}
	count := func(r int) int {
		n := 0
		for _, p := range pairs {
			n += len(p[r])
		}
		return n
	}
	sort.SliceStable(out, func(i, j int) bool { return count(out[i]) > count(out[j]) })
	return out[:min(len(out), BrandSiblings)]
}

// score is a candidate's: the keypoints' score, and the rest of the
// comparison (Scores.Total) at half weight filling what that leaves:
// 1-(1-keypoints)(1-total/2). Colours and layout order the candidates with
// few inliers and break near ties between brands. Chosen on the held-out
// benchmark (bandgen's brands of seed 7, other demo lines and photos than
// TestIdentifyAccuracy's): against ranking by inliers alone, it found 3 to
// 5 points more lines first at every level. Evidence without keypoints
// ("vitola-band-2") scores total/2: add it again for keypoints.
func score(c Candidate) float64 {
	return 1 - (1-c.Scores.Keypoints)*(1-restShare*c.Scores.Total)
}

const restShare = 0.5
