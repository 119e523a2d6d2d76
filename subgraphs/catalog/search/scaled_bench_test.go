package search_test

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

// scaledSearchQueries are REST search's mix at ×100 (the one make
// bench-compare runs): brands, lines, vitolas, an alias, a typo and a prefix.
var scaledSearchQueries = []string{
	"padron", "montecristo no 2", "ryj churchill", "hemingway short", "robusto",
	"davidof", "liga privada", "maduro toro", "oliva serie v", "cohiba",
}

// scaled100 is the ×100 index, built by the first benchmark that needs it.
var scaled100 *search.Index

func scaledIndex(b *testing.B) *search.Index {
	if scaled100 == nil {
		scaled100 = buildScaled(b, 100).ix
	}
	return scaled100
}

// BenchmarkSearchScaled is the in-process cost of one search (first page of
// 20) on the ×100 catalog (about 105k cigars), cycling through the mix, with
// the per-word match cache warm. The index is built once per process, so
// -count repeats measure search alone. Beside ns/op it reports the process's
// CPU time per search (cpu-µs/op), which a busy machine inflates less than
// wall time. BenchmarkSearchScaled/mix is the mix, /parallel the mix run concurrently, the others one query each
// (-short leaves them out).
//
//	go test ./subgraphs/catalog/search -run '^$' -bench 'SearchScaled/mix' -count 5
func BenchmarkSearchScaled(b *testing.B) {
	ix := scaledIndex(b)
	b.Run("mix", func(b *testing.B) { searchLoop(b, ix, scaledSearchQueries) })
	// The mix from GOMAXPROCS goroutines at once, as a server runs it: the
	// scratch pool and the garbage collector at work.
	b.Run("parallel", func(b *testing.B) {
		var next atomic.Int64
		start := cpuTime(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ix.SearchPage(scaledSearchQueries[next.Add(1)%int64(len(scaledSearchQueries))], "", nil, 20)
			}
		})
		b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
	})
	if !testing.Short() {
		for _, q := range scaledSearchQueries {
			b.Run(q, func(b *testing.B) { searchLoop(b, ix, []string{q}) })
		}
	}
}

// searchLoop runs the queries in turn, first once each to warm the match
// cache.
func searchLoop(b *testing.B, ix *search.Index, qs []string) {
	for _, q := range qs {
		ix.SearchPage(q, "", nil, 20)
	}
	start := cpuTime(b)
	n := 0
	for ; b.Loop(); n++ {
		ix.SearchPage(qs[n%len(qs)], "", nil, 20)
	}
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(n), "cpu-µs/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
