package index_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/index"
)

// clustered makes n unit vectors around c cluster centres, like evidence of
// bands that resemble each other within a brand.
func clustered(n, c, dim int, seed uint64) []index.Item {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = unit(rng, dim, nil, 0)
	}
	items := make([]index.Item, n)
	for i := range items {
		items[i] = index.Item{Ref: i, Vec: unit(rng, dim, centres[i%c], 0.35)}
	}
	return items
}

func unit(rng *rand.Rand, dim int, around []float32, noise float64) []float32 {
	v := make([]float32, dim)
	var norm float64
	for d := range v {
		x := rng.NormFloat64()
		if around != nil {
			x = float64(around[d]) + noise*x/math.Sqrt(float64(dim))
		}
		v[d] = float32(x)
		norm += x * x
	}
	for d := range v {
		v[d] /= float32(math.Sqrt(norm))
	}
	return v
}

func scan(items []index.Item, q []float32) int {
	best, bestScore := -1, float32(-2)
	for _, it := range items {
		var s float32
		for d := range q {
			s += q[d] * it.Vec[d]
		}
		if s > bestScore {
			best, bestScore = it.Ref, s
		}
	}
	return best
}

func TestNearestMatchesAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{50, index.ScanBelow + 1, 10_000} {
		items := clustered(n, 300, 64, uint64(n))
		ix := index.Build(items)
		found := 0
		const queries = 300
		for q := range queries {
			target := items[(q*7919)%n]
			query := unit(rng, 64, target.Vec, 0.1) // a noisy photo of a known band
			hits := ix.Nearest(query, 5)
			if len(hits) == 0 {
				t.Fatal("no hits")
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Fatal("hits not best first")
				}
			}
			if hits[0].Ref == scan(items, query) {
				found++
			}
		}
		recall := float64(found) / queries
		t.Logf("%d items: top-1 agrees with a full scan for %.1f%% of queries", n, 100*recall)
		if recall < 0.97 {
			t.Errorf("%d items: recall %.3f, want ≥ 0.97", n, recall)
		}
	}
	a, b := index.Build(clustered(3000, 50, 16, 1)), index.Build(clustered(3000, 50, 16, 1))
	q := clustered(1, 1, 16, 2)[0].Vec
	if ha, hb := a.Nearest(q, 10), b.Nearest(q, 10); len(ha) != len(hb) || ha[0] != hb[0] || ha[9] != hb[9] {
		t.Fatal("the same items built different indexes")
	}
}

// BenchmarkNearest10k compares the index with a full scan of 10,000 vectors of
// the fingerprint's size, in the same run.
func BenchmarkNearest10k(b *testing.B) {
	items := clustered(10_000, 300, 64, 3)
	q := unit(rand.New(rand.NewPCG(4, 4)), 64, items[77].Vec, 0.1)
	b.Run("index", func(b *testing.B) {
		ix := index.Build(items)
		b.ReportAllocs()
		for b.Loop() {
			ix.Nearest(q, 64)
		}
	})
	b.Run("full-scan-baseline", func(b *testing.B) {
		for b.Loop() {
			scan(items, q)
		}
	})
}
