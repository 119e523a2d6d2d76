// Package index finds the evidence nearest a query fingerprint's vector without
// scanning all evidence: an inverted-file index (IVF). Vectors are grouped
// around k-means centroids; a query compares itself with the centroids, then
// scans only the lists of the nearest few. Small indexes (where a scan is
// cheaper than the centroids) are scanned whole, exactly.
package index

import (
	"math"
	"sort"
)

// Item is one indexed vector. Vectors are L2-normalised, so the dot product is
// the cosine similarity.
type Item struct {
	// Ref is the caller's reference (the evidence's position).
	Ref int
	Vec []float32
}

// Hit is a found item and its cosine similarity to the query.
type Hit struct {
	Ref   int
	Score float32
}

// Index is immutable once built; queries may run concurrently.
type Index struct {
	items     []Item
	centroids [][]float32 // nil: scan everything
	lists     [][]int32   // item positions per centroid
	probes    int
}

// ScanBelow is the size under which the index is a plain scan.
const ScanBelow = 2048

// Build indexes items. It is deterministic: the same items build the same index.
func Build(items []Item) *Index {
	ix := &Index{items: items}
	n := len(items)
	if n < ScanBelow {
		return ix
	}
	k := int(math.Sqrt(float64(n)))
	ix.centroids = kmeans(sample(items, trainingSize), k, 6)
	ix.lists = make([][]int32, k)
	for i, it := range items {
		c := nearestCentroid(ix.centroids, it.Vec)
		ix.lists[c] = append(ix.lists[c], int32(i))
	}
	// Probing a tenth of the lists keeps recall high on clustered data at a
	// tenth of a scan's cost.
	ix.probes = max(4, k/10)
	return ix
}

// Len is the number of indexed items.
func (ix *Index) Len() int { return len(ix.items) }

// Nearest returns up to k items most similar to q, best first (ties by Ref).
func (ix *Index) Nearest(q []float32, k int) []Hit {
	top := make([]Hit, 0, k+1)
	consider := func(i int) {
		s := dot(q, ix.items[i].Vec)
		if len(top) == k && s <= top[k-1].Score {
			return
		}
		h := Hit{Ref: ix.items[i].Ref, Score: s}
		j := sort.Search(len(top), func(j int) bool { return better(h, top[j]) })
		top = append(top, Hit{})
		copy(top[j+1:], top[j:])
		top[j] = h
		if len(top) > k {
			top = top[:k]
		}
	}
	if ix.centroids == nil {
		for i := range ix.items {
			consider(i)
		}
		return top
	}
	for _, c := range nearestCentroids(ix.centroids, q, ix.probes) {
		for _, i := range ix.lists[c] {
			consider(int(i))
		}
	}
	return top
}

func better(a, b Hit) bool { return a.Score > b.Score || (a.Score == b.Score && a.Ref < b.Ref) }

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		if i < len(b) {
			s += a[i] * b[i]
		}
	}
	return s
}

func nearestCentroid(cs [][]float32, v []float32) int {
	best, bestScore := 0, float32(math.Inf(-1))
	for i, c := range cs {
		if s := dot(c, v); s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

func nearestCentroids(cs [][]float32, v []float32, n int) []int {
	order := make([]int, len(cs))
	scores := make([]float32, len(cs))
	for i, c := range cs {
		order[i], scores[i] = i, dot(c, v)
	}
	sort.Slice(order, func(a, b int) bool {
		return scores[order[a]] > scores[order[b]] || (scores[order[a]] == scores[order[b]] && order[a] < order[b])
	})
	return order[:min(n, len(order))]
}

// trainingSize bounds the items k-means learns centroids from: every item is
// still assigned to its nearest centroid, but a rebuild stays fast as evidence
// grows.
const trainingSize = 2048

// sample picks up to n evenly spaced items (deterministic).
func sample(items []Item, n int) []Item {
	if len(items) <= n {
		return items
	}
	out := make([]Item, n)
	for i := range out {
		out[i] = items[i*len(items)/n]
	}
	return out
}

// kmeans clusters by cosine (spherical k-means), seeded with evenly spaced items
// so that it is deterministic.
func kmeans(items []Item, k, rounds int) [][]float32 {
	dim := len(items[0].Vec)
	cs := make([][]float32, k)
	for i := range cs {
		cs[i] = append([]float32(nil), items[i*len(items)/k].Vec...)
	}
	assign := make([]int, len(items))
	for range rounds {
		for i, it := range items {
			assign[i] = nearestCentroid(cs, it.Vec)
		}
		sums := make([][]float64, k)
		for i := range sums {
			sums[i] = make([]float64, dim)
		}
		for i, it := range items {
			for d, x := range it.Vec {
				sums[assign[i]][d] += float64(x)
			}
		}
		for c := range cs {
			var norm float64
			for _, x := range sums[c] {
				norm += x * x
			}
			if norm == 0 {
				continue // an empty cluster keeps its centroid
			}
			norm = math.Sqrt(norm)
			for d := range cs[c] {
				cs[c][d] = float32(sums[c][d] / norm)
			}
		}
	}
	return cs
}
