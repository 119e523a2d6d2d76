package search_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
)

// Floors every evaluation set is held to (issue 43): resolved and correct
// ≥ 85%, resolved but wrong ≤ 1%, ambiguous queries resolved ≤ 1%.
const (
	resolvedFloor  = 85.0
	wrongCeiling   = 1.0
	ambiguousLimit = 1.0
)

type resolveCase struct {
	Query      string `json:"query"`
	Brand      string `json:"brand"`
	Cigar      string `json:"cigar"`
	Kind       string `json:"kind"`
	BrandParam string `json:"brandParam"`
	Why        string `json:"why"`
	// Contract says, in a set's contested.jsonl, why the documented rule
	// resolves an ambiguous query of the set (to Brand, Cigar).
	Contract string `json:"contract"`
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
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c resolveCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	return out
}

// evalSet is a catalog with the queries written for it.
type evalSet struct {
	name string
	// load puts the catalog into an empty store.
	load               func(ctx context.Context, st catalog.Store) error
	queries, ambiguous string
	// contested (optional) lists ambiguous queries the documented rule
	// resolves on purpose: counted apart, and held to the cigar it names.
	contested                  string
	minQueries, minAmbiguous   int
	resolvedFloor, top1Floor   float64
	wrongCeiling, ambiguousMax float64
}

// importFile loads a catalog JSONL through the importer, as `vitola import
// catalog` does.
func importFile(path string) func(ctx context.Context, st catalog.Store) error {
	return func(ctx context.Context, st catalog.Store) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		recs, err := importer.Parse(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		_, err = importer.Apply(ctx, st, recs, nil)
		return err
	}
}

// evalSets are the sets under testdata: the demo catalog with its aliases
// (resolve_queries.jsonl, resolve_ambiguous.jsonl), and each directory
// holding catalog.jsonl, queries.jsonl and ambiguous.jsonl: dev (the demo
// catalog without any alias, the set resolve is calibrated on) and heldout
// (another catalog and queries, written separately; absent on some branches).
func evalSets(t testing.TB) []evalSet {
	sets := []evalSet{{
		name: "demo", load: func(ctx context.Context, st catalog.Store) error { return demo.Seed(ctx, st, nil) },
		queries: "testdata/resolve_queries.jsonl", ambiguous: "testdata/resolve_ambiguous.jsonl",
		minQueries: 150, minAmbiguous: 50,
		// The demo set's own floors (issue 25) are stricter: nothing wrong.
		resolvedFloor: 90, top1Floor: 95,
	}}
	for _, dir := range []string{"dev", "heldout"} {
		path := filepath.Join("testdata", dir)
		if _, err := os.Stat(filepath.Join(path, "catalog.jsonl")); errors.Is(err, fs.ErrNotExist) {
			t.Logf("%s: no %s/catalog.jsonl, not evaluated", dir, path)
			continue
		}
		sets = append(sets, evalSet{
			name: dir, load: importFile(filepath.Join(path, "catalog.jsonl")),
			queries: filepath.Join(path, "queries.jsonl"), ambiguous: filepath.Join(path, "ambiguous.jsonl"),
			contested:  filepath.Join(path, "contested.jsonl"),
			minQueries: 100, minAmbiguous: 20,
			resolvedFloor: resolvedFloor, wrongCeiling: wrongCeiling, ambiguousMax: ambiguousLimit,
		})
	}
	return sets
}

// tally counts one kind's outcomes.
type tally struct{ n, top1, top5, resolved, wrong int }

func (tl *tally) add(c resolveCase, hits []search.Hit, resolved bool) {
	tl.n++
	for i, h := range hits {
		if h.Brand.Name == c.Brand && h.Cigar.Name == c.Cigar {
			if i == 0 {
				tl.top1++
				if resolved {
					tl.resolved++
				}
			}
			if i < 5 {
				tl.top5++
			}
		}
	}
	if resolved && (hits[0].Brand.Name != c.Brand || hits[0].Cigar.Name != c.Cigar) {
		tl.wrong++
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// evaluation is what a set's queries gave on one index: the figures and,
// per query, the answer (to compare backends).
type evaluation struct {
	byKind            map[string]*tally
	all               tally
	ambiguous, ambRes int
	// contested ambiguous queries, and how many of them resolved.
	contested, contRes int
	answers            []string
}

func evaluate(t *testing.T, ix *search.Index, set evalSet, logMisses bool) *evaluation {
	t.Helper()
	cases := readCases(t, set.queries)
	if len(cases) < set.minQueries {
		t.Fatalf("%s: only %d queries", set.queries, len(cases))
	}
	ev := &evaluation{byKind: map[string]*tally{}}
	for _, c := range cases {
		hits, resolved := ix.Resolve(c.Query, c.BrandParam, 5)
		k := ev.byKind[c.Kind]
		if k == nil {
			k = &tally{}
			ev.byKind[c.Kind] = k
		}
		k.add(c, hits, resolved)
		ev.all.add(c, hits, resolved)
		ev.answers = append(ev.answers, answer(c.Query, hits, resolved))
		switch {
		case len(hits) == 0 || hits[0].Brand.Name != c.Brand || hits[0].Cigar.Name != c.Cigar:
			if resolved {
				t.Logf("%s WRONG (%s): %q → %v, want %s %s", set.name, c.Kind, c.Query, names(hits, 1), c.Brand, c.Cigar)
			} else if logMisses {
				t.Logf("%s miss (%s): %q → %v, want %s %s", set.name, c.Kind, c.Query, names(hits, 2), c.Brand, c.Cigar)
			}
		case !resolved && logMisses:
			t.Logf("%s not resolved (%s): %q → %v", set.name, c.Kind, c.Query, names(hits, 2))
		}
	}
	amb := readCases(t, set.ambiguous)
	if len(amb) < set.minAmbiguous {
		t.Fatalf("%s: only %d ambiguous queries", set.ambiguous, len(amb))
	}
	contested := map[string]resolveCase{}
	if _, err := os.Stat(set.contested); err == nil {
		for _, c := range readCases(t, set.contested) {
			contested[c.Query] = c
		}
	}
	for _, c := range amb {
		hits, resolved := ix.Resolve(c.Query, c.BrandParam, 5)
		ev.answers = append(ev.answers, answer(c.Query, hits, resolved))
		if k, ok := contested[c.Query]; ok {
			delete(contested, c.Query)
			ev.contested++
			if resolved {
				ev.contRes++
				if hits[0].Brand.Name != k.Brand || hits[0].Cigar.Name != k.Cigar {
					t.Errorf("%s contested %q resolved to %v, not the %s %s its contract names", set.name, c.Query, names(hits, 1), k.Brand, k.Cigar)
				}
			}
			t.Logf("%s contested %q: resolved %v to %v (%s)", set.name, c.Query, resolved, names(hits, 1), k.Contract)
			continue
		}
		ev.ambiguous++
		if resolved {
			ev.ambRes++
			t.Logf("%s ambiguous %q RESOLVED to %v (%s)", set.name, c.Query, names(hits, 1), c.Why)
		}
	}
	for q := range contested {
		t.Errorf("%s: contested query %q is not one of %s", set.name, q, set.ambiguous)
	}
	return ev
}

func answer(q string, hits []search.Hit, resolved bool) string {
	return fmt.Sprintf("%q %v %v", q, resolved, names(hits, 5))
}

func (ev *evaluation) report(t *testing.T, set, backend string) {
	t.Helper()
	line := func(kind string, k *tally) {
		t.Logf("%-7s %-6s %-12s %3d queries: top-1 %5.1f%%  top-5 %5.1f%%  resolved-correct %5.1f%%  resolved-wrong %4.1f%% (%d)",
			set, backend, kind, k.n, pct(k.top1, k.n), pct(k.top5, k.n), pct(k.resolved, k.n), pct(k.wrong, k.n), k.wrong)
	}
	for _, kind := range slices.Sorted(maps.Keys(ev.byKind)) {
		line(kind, ev.byKind[kind])
	}
	line("ALL", &ev.all)
	t.Logf("%-7s %-6s %-12s %3d queries: resolved %4.1f%% (%d)", set, backend, "ambiguous", ev.ambiguous, pct(ev.ambRes, ev.ambiguous), ev.ambRes)
	if ev.contested > 0 {
		t.Logf("%-7s %-6s %-12s %3d queries: resolved %d (as the documented rule does; not counted above)", set, backend, "contested", ev.contested, ev.contRes)
	}
}

func (ev *evaluation) holdFloors(t *testing.T, set evalSet) {
	t.Helper()
	if got := pct(ev.all.resolved, ev.all.n); got < set.resolvedFloor {
		t.Errorf("%s: resolved-correct %.1f%% is under the %.0f%% floor", set.name, got, set.resolvedFloor)
	}
	if got := pct(ev.all.top1, ev.all.n); got < set.top1Floor {
		t.Errorf("%s: top-1 %.1f%% is under the %.0f%% floor", set.name, got, set.top1Floor)
	}
	if got := pct(ev.all.wrong, ev.all.n); got > set.wrongCeiling {
		t.Errorf("%s: resolved-wrong %.1f%% (%d) is over the %.0f%% ceiling", set.name, got, ev.all.wrong, set.wrongCeiling)
	}
	if got := pct(ev.ambRes, ev.ambiguous); got > set.ambiguousMax {
		t.Errorf("%s: %.1f%% (%d) of the ambiguous queries resolved, over the %.0f%% allowed", set.name, got, ev.ambRes, set.ambiguousMax)
	}
}

// TestResolveQuality measures resolve on each evaluation set (see evalSets):
// the catalog goes through the real store (the importer, or the demo seed)
// on SQLite, and PostgreSQL when configured, the index is built from the
// store, and the figures are logged per kind (top-1, top-5, resolved-correct,
// resolved-wrong; ambiguous queries resolved). It holds every set to its
// floors, and the backends to the same answers (the index is in memory: the
// store must give it the same catalog). -v logs each miss.
func TestResolveQuality(t *testing.T) {
	ctx := context.Background()
	for _, set := range evalSets(t) {
		t.Run(set.name, func(t *testing.T) {
			var first *evaluation
			var firstBackend string
			backends := sqldbtest.Backends(t)
			for _, backend := range slices.Sorted(maps.Keys(backends)) {
				cfg := backends[backend]
				st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
				if err := set.load(ctx, st); err != nil {
					t.Fatalf("%s on %s: %v", set.name, backend, err)
				}
				ix, err := search.BuildFrom(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
				ev := evaluate(t, ix, set, first == nil && testing.Verbose())
				ev.report(t, set.name, backend)
				ev.holdFloors(t, set)
				if first == nil {
					first, firstBackend = ev, backend
					continue
				}
				for i := range first.answers {
					if first.answers[i] != ev.answers[i] {
						t.Errorf("%s differs from %s:\n%s\n%s", backend, firstBackend, ev.answers[i], first.answers[i])
					}
				}
			}
		})
	}
}

// TestDevCatalogIsTheDemoWithoutAliases: testdata/dev/catalog.jsonl is the
// demo catalog as plain import JSONL, with no brand or cigar alias and no
// product, so that the dev set measures what resolve derives from names
// alone. VITOLA_UPDATE=1 writes it again from demo/facts.json.
func TestDevCatalogIsTheDemoWithoutAliases(t *testing.T) {
	f, err := demo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	brands, cigars := f.Catalog()
	byID := map[string]*catalog.Brand{}
	for _, b := range brands {
		byID[b.ID] = b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, c := range cigars {
		b := byID[c.BrandID]
		rec := importer.Record{Brand: b.Name, Name: c.Name, Origin: c.Origin, Wrapper: c.Wrapper, Binder: c.Binder, Filler: c.Filler}
		if b.Country != nil {
			rec.BrandCountry = *b.Country
		}
		if err := enc.Encode(rec); err != nil {
			t.Fatal(err)
		}
	}
	const path = "testdata/dev/catalog.jsonl"
	if os.Getenv("VITOLA_UPDATE") == "1" {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is not the demo catalog without aliases: run `VITOLA_UPDATE=1 go test ./subgraphs/catalog/search -run TestDevCatalogIsTheDemoWithoutAliases`", path)
	}
	if strings.Contains(string(got), "liases") {
		t.Fatalf("%s holds aliases", path)
	}
}
