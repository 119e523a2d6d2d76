package fingerprint

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNth: nth answers what sorting answers, for every k, on random values,
// on many repeats and on sorted and reversed input.
func TestNth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	inputs := [][]float64{{1}, {2, 1}, {3, 3, 3, 3}}
	for _, n := range []int{5, 17, 100, 1001} {
		a, b, c, d := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			a[i] = r.NormFloat64()
			b[i] = float64(r.IntN(4))
			c[i] = float64(i)
			d[i] = float64(n - i)
		}
		inputs = append(inputs, a, b, c, d)
	}
	for _, in := range inputs {
		want := slices.Sorted(slices.Values(in))
		for k := range in {
			if got := nth(slices.Clone(in), k); got != want[k] {
				t.Fatalf("nth(%v, %d) = %v, want %v", in, k, got, want[k])
			}
		}
	}
}
