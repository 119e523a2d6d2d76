package limits_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// The analyzer caches its verdicts by operation text, documents included when
// the cost depends on variables: distinct texts must not make it hold more
// than MaxCacheBytes (a parsed document holds about 60 bytes per byte of text:
// the 2,048 entries of the cache, of documents within every bound, once held
// gigabytes; 500 of these 1.3 KB documents held 36 MB).
func TestAnalyzerCacheHoldsBoundedMemory(t *testing.T) {
	a, err := limits.New(clientSDL, []string{subgraphSDL}, limits.Config{MaxCacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	doc := func(i int) string {
		return "#" + strconv.Itoa(i) + "\nquery($n: Int!) { searchCigars(query: \"x\", first: $n) { edges { cursor } } cigar(id: \"1\") { " +
			strings.Repeat("id name ", 50) + " similar { " + strings.Repeat("id name ", 50) + " twin { " + strings.Repeat("id name ", 50) + " } } } }"
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 500 {
		if _, err := a.Check(doc(i), "", map[string]any{"n": float64(1)}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the cache holds %.1f MB", float64(held)/1e6)
	if held > 16<<20 {
		t.Fatalf("the cache holds %d MB after 500 distinct documents, for a budget of 8 MiB", held>>20)
	}
	runtime.KeepAlive(a)
}
