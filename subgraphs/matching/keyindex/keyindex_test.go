package keyindex_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/keyindex"
)

// randomDescriptors makes n random 256-bit descriptors.
func randomDescriptors(r *rand.Rand, n int) []uint64 {
	d := make([]uint64, 4*n)
	for i := range d {
		d[i] = r.Uint64()
	}
	return d
}

// flip returns d with k of each descriptor's bits flipped.
func flip(r *rand.Rand, d []uint64, k int) []uint64 {
	out := append([]uint64(nil), d...)
	for i := 0; i < len(d)/4; i++ {
		for _, b := range r.Perm(256)[:k] {
			out[i*4+b/64] ^= 1 << (b % 64)
		}
	}
	return out
}

// TestPairs: a photo's keypoints that are one item's, 40 bits of 256
// changed, are paired with that item's keypoints, each with its own, and
// not with the other items'; an unrelated photo pairs with nothing.
func TestPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var items []keyindex.Item
	for i := range 50 {
		items = append(items, keyindex.Item{Ref: 100 + i, Desc: randomDescriptors(r, 400)})
	}
	ix := keyindex.Build(items)
	if ix.Len() != 50 {
		t.Fatalf("Len %d", ix.Len())
	}
	q := flip(r, items[7].Desc[:4*200], 40)
	got := ix.Pairs(q, 64)
	var own []int
	for _, c := range got {
		if c.Ref != 107 {
			t.Errorf("item %d paired with %d keypoints of another item", c.Ref, len(c.Pairs))
			continue
		}
		for _, p := range c.Pairs {
			if p.E != p.Q {
				t.Errorf("query keypoint %d paired with keypoint %d", p.Q, p.E)
			}
			if p.D > 64 || p.D2 != keyindex.Unseen {
				t.Errorf("pair %+v: distance over 64, or a next nearest among random keypoints", p)
			}
			own = append(own, int(p.Q))
		}
	}
	// One of 21 parts unchanged by 40 flipped bits: about 9 times in 10.
	if len(own) < 150 {
		t.Errorf("%d of 200 keypoints paired with their own", len(own))
	}
	if got := ix.Pairs(randomDescriptors(r, 200), 64); len(got) != 0 {
		t.Errorf("an unrelated photo paired with %d items", len(got))
	}
}

// TestPairsWidened: a keypoint every item holds fills its buckets past the
// crowded size, and a look-up skips them; widened, it finds every item.
func TestPairsWidened(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	common := randomDescriptors(r, 1)
	var items []keyindex.Item
	for i := range 200 {
		items = append(items, keyindex.Item{Ref: i, Desc: append(randomDescriptors(r, 10), common...)})
	}
	ix := keyindex.Build(items)
	if got := ix.Pairs(common, 64); len(got) != 0 {
		t.Errorf("a keypoint in crowded buckets paired with %d items", len(got))
	}
	if got := ix.PairsWidened(common, 64, 2); len(got) != 200 {
		t.Errorf("widened, it paired with %d items, want 200", len(got))
	}
}

// TestRunnerUp: a pair's D2 is the item's next nearest keypoint even when
// that is farther than maxDistance (up to a quarter more), so that the
// ratio test sees it: a nearest at 60 bits with another at 70 is
// ambiguous, whatever the limit on pairs. Keypoints farther than
// maxDistance are not paired.
func TestRunnerUp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	q := randomDescriptors(r, 1)
	// Flip bits past the first part, so that both share it with q.
	away := func(k int) []uint64 {
		out := append([]uint64(nil), q...)
		for _, b := range r.Perm(256 - keyindex.PartBits)[:k] {
			b += keyindex.PartBits
			out[b/64] ^= 1 << (b % 64)
		}
		return out
	}
	ix := keyindex.Build([]keyindex.Item{{Ref: 1, Desc: append(away(60), away(70)...)}, {Ref: 2, Desc: away(70)}})
	got := ix.Pairs(q, 64)
	if len(got) != 1 || got[0].Ref != 1 || len(got[0].Pairs) != 1 {
		t.Fatalf("pairs %+v, want one, with item 1", got)
	}
	if p := got[0].Pairs[0]; p.E != 0 || p.D != 60 || p.D2 != 70 {
		t.Errorf("pair %+v, want E 0, D 60, D2 70", p)
	}
}
