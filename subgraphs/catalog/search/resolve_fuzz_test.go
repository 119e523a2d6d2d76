package search_test

import (
	"testing"
)

// FuzzResolve: resolve never panics on any text (sizes, numerals, counts and
// listing words are parsed before matching), returns at most the limit, and a
// resolved answer is its first candidate.
func FuzzResolve(f *testing.F) {
	ix := demoIndex(f)
	for _, s := range []string{
		"Montecristo #II 52x6 1/8\" box of 25", "no2 nº 3 N° 4 number iv", "5 x", "x 50", "50x", "#", "# #",
		"psd 4 psd4 PSD", "1/2 x 1/2", "6.5 by 54 ring gauge rg", "ó\u0301 ǅ ﬁ 5,5x52", "cigar cigars box of",
	} {
		f.Add(s, "")
	}
	f.Add("Churchill", "RyJ")
	f.Fuzz(func(t *testing.T, text, brand string) {
		if len(text) > 200 || len(brand) > 200 {
			return // the routes refuse longer text
		}
		hits, resolved := ix.Resolve(text, brand, 5)
		if len(hits) > 5 {
			t.Fatalf("%q: %d candidates over the limit of 5", text, len(hits))
		}
		if resolved && len(hits) == 0 {
			t.Fatalf("%q: resolved without a candidate", text)
		}
	})
}
