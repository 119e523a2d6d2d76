// Package keyindex pairs a photo's keypoints with the evidence keypoints
// nearest them without comparing the photo with every evidence item: each
// evidence keypoint's 256-bit descriptor is filed under each of its 21
// 12-bit parts; a photo's keypoint looks up its own parts and checks the
// keypoints filed there in full. Two keypoints of one detail differ in a few
// dozen of their 256 bits, so one of their parts is usually the same (at 50
// bits apart, four times in five); unrelated keypoints rarely share a part,
// and the full check turns those away. Recognition ranks the items by how
// their pairs agree on one placement in the photo, and verifies the best
// (fingerprint.PlacementVotes, fingerprint.VerifyPairs).
//
// Its cost grows with the evidence: each lookup checks about n/4096 of the
// n filed keypoints (n is 1000 an evidence item), and it holds 84 bytes a
// keypoint beside the descriptors' 32. It is made for catalogs of up to a
// few thousand lines (see docs/internals/matching.md).
package keyindex

import (
	"slices"

	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// PartBits is the width of a filed part; Parts is how many are filed.
const (
	PartBits = 12
	Parts    = 256 / PartBits
)

// Item is one evidence item's keypoint descriptors, 4 words each.
type Item struct {
	// Ref is the caller's reference (the evidence's position).
	Ref  int
	Desc []uint64
}

// Index is immutable once built; queries may run concurrently.
type Index struct {
	refs  []int
	owner []uint32 // keypoint -> item
	first []uint32 // item -> its first keypoint
	desc  []uint64 // keypoint descriptors, 4 words each
	// start[p][v] .. start[p][v+1] are the keypoints filed under value v of
	// part p, in entries[p].
	start   [Parts][]uint32
	entries [Parts][]uint32
	// crowded is the bucket size above which a part's value is skipped: a
	// pattern so common (a straight edge, a flat patch's corner) that it
	// tells no item apart, and would cost a check of every keypoint filed.
	crowded int
}

// crowdedFloor is the least crowded bucket: about twice the average with
// 286 evidence items of 1000 keypoints (the demo's and a test's); larger
// indexes allow twice their average.
const crowdedFloor = 128

// Build files the items' keypoints.
func Build(items []Item) *Index {
	ix := &Index{refs: make([]int, len(items)), first: make([]uint32, len(items))}
	n := 0
	for _, it := range items {
		n += len(it.Desc) / 4
	}
	ix.owner = make([]uint32, 0, n)
	ix.desc = make([]uint64, 0, 4*n)
	for i, it := range items {
		ix.refs[i] = it.Ref
		ix.first[i] = uint32(len(ix.owner))
		for range len(it.Desc) / 4 {
			ix.owner = append(ix.owner, uint32(i))
		}
		ix.desc = append(ix.desc, it.Desc[:len(it.Desc)/4*4]...)
	}
	for p := range Parts {
		count := make([]uint32, 1<<PartBits+1)
		for k := range n {
			count[int(part(ix.desc[k*4:k*4+4], p))+1]++
		}
		for v := 1; v < len(count); v++ {
			count[v] += count[v-1]
		}
		entries := make([]uint32, n)
		next := slices.Clone(count[:1<<PartBits])
		for k := range n {
			v := part(ix.desc[k*4:k*4+4], p)
			entries[next[v]] = uint32(k)
			next[v]++
		}
		ix.start[p], ix.entries[p] = count, entries
	}
	ix.crowded = max(crowdedFloor, 2*n>>PartBits)
	return ix
}

// part is bits [p*PartBits, (p+1)*PartBits) of a descriptor.
func part(d []uint64, p int) uint16 {
	b := p * PartBits
	w, o := b/64, b%64
	v := d[w] >> o
	if o+PartBits > 64 {
		v |= d[w+1] << (64 - o)
	}
	return uint16(v & (1<<PartBits - 1))
}

// Len is the number of items.
func (ix *Index) Len() int { return len(ix.refs) }

// Unseen is a pair's D2 when the item held no other checked keypoint near
// the query's.
const Unseen = 256

// Candidates is an item and its pairs with a photo's keypoints.
type Candidates struct {
	Ref   int
	Pairs []fingerprint.KeyPair
}

// Pairs pairs each of the query's keypoints (desc, 4 words each) with the
// nearest keypoint of every item that holds one within maxDistance bits
// among those filed under one of its parts (E is its position in the item's
// descriptors; D2 is the distance of the item's next nearest so checked,
// counted up to a quarter beyond maxDistance: a ratio test of 0.8 needs no
// farther one, and one that near makes a pair ambiguous).
// Items come in the order they were filed.
func (ix *Index) Pairs(desc []uint64, maxDistance int) []Candidates {
	return ix.PairsWidened(desc, maxDistance, 1)
}

// PairsWidened is Pairs with buckets up to widen times as crowded looked
// up too.
func (ix *Index) PairsWidened(desc []uint64, maxDistance, widen int) []Candidates {
	crowded := ix.crowded * widen
	runnerUp := int32(maxDistance * 5 / 4)
	type near struct {
		e, d, d2 int32
	}
	cur := make([]near, len(ix.refs)) // this query keypoint's nearest in each item; e = -1 unset
	for i := range cur {
		cur[i].e = -1
	}
	var touched []uint32
	pairs := make([][]fingerprint.KeyPair, len(ix.refs))
	for q := range len(desc) / 4 {
		d := desc[q*4 : q*4+4 : q*4+4]
		for p := range Parts {
			v := part(d, p)
			s, e := ix.start[p][v], ix.start[p][int(v)+1]
			if int(e-s) > crowded {
				continue
			}
			for _, kp := range ix.entries[p][s:e] {
				o := ix.desc[kp*4 : kp*4+4 : kp*4+4]
				dist := int32(fingerprint.DescriptorDistance(d, o))
				if dist > runnerUp {
					continue
				}
				it := ix.owner[kp]
				c := &cur[it]
				local := int32(kp - ix.first[it])
				switch {
				case c.e < 0:
					touched = append(touched, it)
					*c = near{local, dist, Unseen}
				case local == c.e:
					// the same keypoint, filed under another part
				case dist < c.d:
					*c = near{local, dist, c.d}
				case dist < c.d2:
					c.d2 = dist
				}
			}
		}
		for _, it := range touched {
			c := cur[it]
			if c.d <= int32(maxDistance) {
				pairs[it] = append(pairs[it], fingerprint.KeyPair{Q: int32(q), E: c.e, D: int16(c.d), D2: int16(c.d2)})
			}
			cur[it].e = -1
		}
		touched = touched[:0]
	}
	var out []Candidates
	for i, ps := range pairs {
		if len(ps) > 0 {
			out = append(out, Candidates{Ref: ix.refs[i], Pairs: ps})
		}
	}
	return out
}
