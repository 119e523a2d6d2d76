package search_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
)

// resolvedFloor is the share of the test set that must be resolved to the
// right cigar (issue 25 asks ≥ 90%).
const resolvedFloor = 90

type resolveCase struct {
	Query      string `json:"query"`
	Brand      string `json:"brand"`
	Cigar      string `json:"cigar"`
	Kind       string `json:"kind"`
	BrandParam string `json:"brandParam"`
	Why        string `json:"why"`
}

func readCases(t testing.TB, path string) []resolveCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []resolveCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c resolveCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	return out
}

// TestResolveQuality measures resolve on imperfect queries (typos, missing
// accents, aliases, word order, missing words, vitola names, case, numerals
// written either way, brand initials, community acronyms, extra words, sizes)
// and on ambiguous ones, logs the figures by kind, and holds the floors: no
// query resolved to the wrong cigar, no ambiguous query resolved, top-1 ≥ 95%
// and resolved-and-correct ≥ 90%.
func TestResolveQuality(t *testing.T) {
	ix := demoIndex(t)
	cases := readCases(t, "testdata/resolve_queries.jsonl")
	if len(cases) < 150 {
		t.Fatalf("only %d queries in the test set", len(cases))
	}
	type tally struct{ n, top1, top5, resolved, wrong int }
	byKind := map[string]*tally{}
	var all tally
	for _, c := range cases {
		hits, resolved := ix.Resolve(c.Query, c.BrandParam, 5)
		k := byKind[c.Kind]
		if k == nil {
			k = &tally{}
			byKind[c.Kind] = k
		}
		for _, tl := range []*tally{k, &all} {
			tl.n++
			for i, h := range hits {
				if h.Brand.Name == c.Brand && h.Cigar.Name == c.Cigar {
					if i == 0 {
						tl.top1++
						if resolved {
							tl.resolved++
						}
					}
					tl.top5++
				}
			}
			if resolved && (hits[0].Brand.Name != c.Brand || hits[0].Cigar.Name != c.Cigar) {
				tl.wrong++
			}
		}
		switch {
		case len(hits) == 0 || hits[0].Brand.Name != c.Brand || hits[0].Cigar.Name != c.Cigar:
			if resolved {
				t.Errorf("wrongly resolved (%s): %q → %v", c.Kind, c.Query, names(hits, 1))
			} else {
				t.Logf("miss (%s): %q → %v", c.Kind, c.Query, names(hits, 2))
			}
		case !resolved:
			t.Logf("not resolved (%s): %q → %v", c.Kind, c.Query, names(hits, 2))
		}
	}
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(b) }
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		k := byKind[kind]
		t.Logf("%-8s %3d queries: top-1 %5.1f%%  top-5 %5.1f%%  resolved right %5.1f%%  resolved wrong %d", kind, k.n, pct(k.top1, k.n), pct(k.top5, k.n), pct(k.resolved, k.n), k.wrong)
	}
	t.Logf("ALL      %3d queries: top-1 %5.1f%%  top-5 %5.1f%%  resolved right %5.1f%%  resolved wrong %d", all.n, pct(all.top1, all.n), pct(all.top5, all.n), pct(all.resolved, all.n), all.wrong)

	ambiguous := readCases(t, "testdata/resolve_ambiguous.jsonl")
	resolvedAmbiguous := 0
	for _, c := range ambiguous {
		if hits, resolved := ix.Resolve(c.Query, c.BrandParam, 5); resolved {
			resolvedAmbiguous++
			t.Errorf("ambiguous %q resolved to %v (%s)", c.Query, names(hits, 1), c.Why)
		}
	}
	t.Logf("ambiguous: %d queries, %d resolved", len(ambiguous), resolvedAmbiguous)
	if pct(all.top1, all.n) < 95 {
		t.Errorf("top-1 %.1f%% is under the 95%% floor", pct(all.top1, all.n))
	}
	if pct(all.resolved, all.n) < resolvedFloor {
		t.Errorf("resolved-and-correct %.1f%% is under the %v%% floor", pct(all.resolved, all.n), resolvedFloor)
	}
}
