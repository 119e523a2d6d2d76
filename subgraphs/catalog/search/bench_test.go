package search_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

// benchQueries mix what people type: exact names, typos, aliases, prefixes,
// single common words (the widest result sets).
var benchQueries = []string{
	"padron 1964 exclusivo", "montecristo no 2", "ryj churchill", "padorn", "davidof escurio",
	"hemingway short sto", "robusto", "liga privada no 9", "oliva serie v melanio", "maduro",
	"cohiba behike 56", "my father le bijou toro", "partagas serie d 4", "connecticut", "lfd double ligero",
}

func scaledIndex(b testing.TB, n int) *search.Index {
	b.Helper()
	f, err := demo.LoadFacts()
	if err != nil {
		b.Fatal(err)
	}
	brands, cigars := f.Scaled(n).Catalog()
	return search.Build(brands, cigars)
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1, 10} {
		ix := scaledIndex(b, n)
		b.Run(fmt.Sprintf("%dk", ix.Len()/1000), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				ix.SearchPage(benchQueries[i%len(benchQueries)], "", nil, 20)
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	for _, n := range []int{1, 10} {
		ix := scaledIndex(b, n)
		b.Run(fmt.Sprintf("%dk", ix.Len()/1000), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				ix.Resolve(benchQueries[i%len(benchQueries)], "", 5)
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	f, _ := demo.LoadFacts()
	brands, cigars := f.Scaled(10).Catalog()
	for b.Loop() {
		search.Build(brands, cigars)
	}
}

// TestSearchLatency reports p50/p99/max of search and resolve over the query mix
// at 1k and 10k cigars, one core's worth of sequential calls. VITOLA_BENCH=1
// measures; otherwise, as in CI, a short run only proves it works.
func TestSearchLatency(t *testing.T) {
	calls := 300
	if os.Getenv("VITOLA_BENCH") == "1" {
		calls = 3000
	}
	for _, n := range []int{1, 10} {
		ix := scaledIndex(t, n)
		for _, op := range []struct {
			name string
			run  func(q string)
		}{
			{"search", func(q string) { ix.SearchPage(q, "", nil, 20) }},
			{"resolve", func(q string) { ix.Resolve(q, "", 5) }},
		} {
			var lat []time.Duration
			for i := range calls {
				q := benchQueries[i%len(benchQueries)]
				start := time.Now()
				op.run(q)
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			t.Logf("%-7s %5d cigars: p50 %8s  p99 %8s  max %8s", op.name, ix.Len(), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
		}
	}
}
