package search_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
)

// countingStore counts full reads of the catalog: after the first build, a
// live index should only read what changed.
type countingStore struct {
	*sqlstore.Store
	fullReads atomic.Int64
}

func (s *countingStore) AllCigars(ctx context.Context) ([]*catalog.Cigar, error) {
	s.fullReads.Add(1)
	return s.Store.AllCigars(ctx)
}

// importCopies makes an import of n new cigars: copies of the catalog's, named
// "<name> Lote <k>", so they rank among the cigars already there.
func importCopies(brands []*catalog.Brand, cigars []*catalog.Cigar, n, k int) []importer.Record {
	brandName := map[string]string{}
	for _, b := range brands {
		brandName[b.ID] = b.Name
	}
	recs := make([]importer.Record, 0, n)
	for i := range n {
		c := cigars[(i*7+k)%len(cigars)]
		recs = append(recs, importer.Record{Brand: brandName[c.BrandID], Name: fmt.Sprintf("%s Lote %d", c.Name, k),
			Origin: c.Origin, Wrapper: c.Wrapper, Binder: c.Binder, Filler: c.Filler, Line: i + 1})
	}
	return recs
}

// TestLiveCursorsStableDuringImport pages through a search while imports of
// new cigars land between pages (on SQLite, and PostgreSQL when configured):
// the live index takes each import without reading the whole catalog again,
// pages go on from their signed cursors, and among the cigars there before the
// imports none is repeated or skipped, in their order before.
func TestLiveCursorsStableDuringImport(t *testing.T) {
	demoIndex(t)
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := &countingStore{Store: sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))}
			if err := st.Write(ctx, func(w catalog.Writer) error {
				for _, b := range demoBrands {
					if err := w.UpsertBrand(ctx, b); err != nil {
						return err
					}
				}
				for _, c := range demoCigars {
					if _, err := w.UpsertCigar(ctx, c); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			live, err := search.NewLive(ctx, st, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			const query, pageSize = "robusto", 15
			before := live.Index().Search(query, "")
			if len(before) < 6*pageSize {
				t.Fatalf("%q matches %d cigars: too few to page through", query, len(before))
			}
			was := map[string]bool{}
			for _, h := range before {
				was[h.Cigar.ID] = true
			}

			cursors, qk := search.NewCursors([]byte("test")), search.QueryKey(query, "")
			var seen []string
			var after *search.Position
			imported := 0
			for page := 0; ; page++ {
				hits, more := live.Index().SearchPage(query, "", after, pageSize)
				for _, h := range hits {
					seen = append(seen, h.Cigar.ID)
				}
				if !more {
					break
				}
				last := hits[len(hits)-1]
				cur := cursors.Encode(qk, search.Position{Score: last.Score, ID: last.Cigar.ID})
				if page < 3 { // an import lands before the next page
					recs := importCopies(demoBrands, demoCigars, 100, page+1)
					if _, err := importer.Apply(ctx, st, recs, nil); err != nil {
						t.Fatal(err)
					}
					if err := live.Refresh(ctx); err != nil {
						t.Fatal(err)
					}
					imported += len(recs)
					if got, want := live.Index().Len(), len(demoCigars)+imported; got != want {
						t.Fatalf("after import %d: %d cigars indexed, want %d", page+1, got, want)
					}
				}
				p, err := cursors.Decode(qk, cur)
				if err != nil {
					t.Fatal(err)
				}
				after = &p
			}

			if n := st.fullReads.Load(); n != 1 {
				t.Errorf("the catalog was read whole %d times, want once (the first build)", n)
			}
			var old []string
			dup := map[string]bool{}
			for _, id := range seen {
				if dup[id] {
					t.Fatalf("%s is on two pages", id)
				}
				dup[id] = true
				if was[id] {
					old = append(old, id)
				}
			}
			want := make([]string, len(before))
			for i, h := range before {
				want[i] = h.Cigar.ID
			}
			if !slices.Equal(old, want) {
				t.Fatalf("the cigars there before the imports, as paged: %d of %d, or out of order", len(old), len(want))
			}
			if len(seen) == len(old) {
				t.Fatal("no imported cigar ranked after the cursor it landed behind: the imports did not reach the pages")
			}
		})
	}
}

// TestLiveCompacts: once imports have fragmented the live index, it is built
// anew in the background, brought up to date with what landed meanwhile and
// swapped in, with Build's answers over the store.
func TestLiveCompacts(t *testing.T) {
	demoIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := sqlstore.New(sqldbtest.MustOpen(t, sqldb.Config{DataDir: t.TempDir()}, sqlstore.StoreName, sqlstore.Migrations))
	if _, err := importer.Apply(ctx, st, importCopies(demoBrands, demoCigars, len(demoCigars), 0), nil); err != nil {
		t.Fatal(err)
	}
	live, err := search.NewLive(ctx, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range []int{200, 30, 30} { // the first fragments it; the others may land while it compacts
		if _, err := importer.Apply(ctx, st, importCopies(demoBrands, demoCigars, n, k+1), nil); err != nil {
			t.Fatal(err)
		}
		if err := live.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for live.Index().Fragmented() {
		if time.Now().After(deadline) {
			t.Fatal("the live index was not compacted within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	brands, err := st.AllBrands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cigars, err := st.AllCigars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cigarIDs []string
	for _, c := range cigars[:50] {
		cigarIDs = append(cigarIDs, c.ID)
	}
	queries := append(slices.Clone(benchQueries(t)[:60]), "robusto lote 3", "churchill lote 1", "lote 2")
	sameAnswers(t, "compacted", live.Index(), search.Build(brands, cigars), queries, []string{brands[0].ID}, cigarIDs)
}
