package sqlstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
)

// TestBrandCountryBecomesNullable upgrades a store made before a brand's
// country could be unknown: the countries it holds stay, and a brand without
// one is stored and read back as nil.
func TestBrandCountryBecomesNullable(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			// The store as migrations 1 and 2 left it, with a brand.
			before := fstest.MapFS{}
			for _, name := range []string{"00001_catalog.sql", "00002_catalog_version.sql"} {
				b, err := fs.ReadFile(sqlstore.Migrations, name)
				if err != nil {
					t.Fatal(err)
				}
				before[name] = &fstest.MapFile{Data: b}
			}
			old := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, before)
			if _, err := old.ExecContext(ctx, old.Rebind(`INSERT INTO brands (id, name, country) VALUES (?, ?, ?)`), catalog.BrandID("Padrón"), "Padrón", "Nicaragua"); err != nil {
				t.Fatal(err)
			}
			old.Close()

			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			b, err := st.Brand(ctx, catalog.BrandID("Padrón"))
			if err != nil || b.Country == nil || *b.Country != "Nicaragua" {
				t.Fatalf("the brand after the upgrade: %+v, %v", b, err)
			}
			unknown := &catalog.Brand{ID: catalog.BrandID("Sin País"), Name: "Sin País"}
			if err := st.Write(ctx, func(w catalog.Writer) error { return w.UpsertBrand(ctx, unknown) }); err != nil {
				t.Fatalf("a brand without a country: %v", err)
			}
			if b, err := st.Brand(ctx, unknown.ID); err != nil || b.Country != nil {
				t.Fatalf("a brand without a country read back: %+v, %v", b, err)
			}
		})
	}
}

// TestCigarAliases upgrades a store made before cigars had aliases: its cigars
// read back with none, aliases written are read back, an upsert without
// aliases (nil) keeps them and one with an empty list clears them.
func TestCigarAliases(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			before := fstest.MapFS{}
			for _, name := range []string{"00001_catalog.sql", "00002_catalog_version.sql", "00003_brand_country_nullable.sql"} {
				b, err := fs.ReadFile(sqlstore.Migrations, name)
				if err != nil {
					t.Fatal(err)
				}
				before[name] = &fstest.MapFile{Data: b}
			}
			old := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, before)
			brandID, cigarID := catalog.BrandID("Partagás"), catalog.CigarID("Partagás", "Serie D No. 4")
			if _, err := old.ExecContext(ctx, old.Rebind(`INSERT INTO brands (id, name, country) VALUES (?, ?, ?)`), brandID, "Partagás", "Cuba"); err != nil {
				t.Fatal(err)
			}
			if _, err := old.ExecContext(ctx, old.Rebind(`INSERT INTO cigars (id, number, brand_id, name, origin) VALUES (?, ?, ?, ?, ?)`), cigarID, 1, brandID, "Serie D No. 4", "Cuba"); err != nil {
				t.Fatal(err)
			}
			old.Close()

			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			aliases := func() []string {
				t.Helper()
				c, err := st.Cigar(ctx, cigarID)
				if err != nil {
					t.Fatal(err)
				}
				return c.Aliases
			}
			if got := aliases(); len(got) != 0 {
				t.Fatalf("aliases after the upgrade: %q", got)
			}
			upsert := func(aliases []string) {
				t.Helper()
				c := &catalog.Cigar{ID: cigarID, BrandID: brandID, Name: "Serie D No. 4", Origin: "Cuba", Aliases: aliases}
				if err := st.Write(ctx, func(w catalog.Writer) error { _, err := w.UpsertCigar(ctx, c); return err }); err != nil {
					t.Fatal(err)
				}
			}
			for _, step := range []struct {
				write, want []string
			}{
				{[]string{"PSD4", "PSD 4"}, []string{"PSD4", "PSD 4"}},
				{nil, []string{"PSD4", "PSD 4"}}, // nil keeps
				{[]string{}, nil},                // empty clears
			} {
				upsert(step.write)
				if got := aliases(); strings.Join(got, "|") != strings.Join(step.want, "|") {
					t.Fatalf("after writing %q: %q, want %q", step.write, got, step.want)
				}
			}
		})
	}
}

// TestChangesSince: the brands and cigars a write changes are read back as
// changed after every version before it and after none since, whatever else
// the write touched; rows a store held before versions were recorded count as
// changed at version 0.
func TestChangesSince(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			// A store from before migration 5 with a brand and a cigar.
			before := fstest.MapFS{}
			for _, name := range []string{"00001_catalog.sql", "00002_catalog_version.sql", "00003_brand_country_nullable.sql", "00004_cigar_aliases.sql"} {
				b, err := fs.ReadFile(sqlstore.Migrations, name)
				if err != nil {
					t.Fatal(err)
				}
				before[name] = &fstest.MapFile{Data: b}
			}
			old := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, before)
			oldBrand, oldCigar := catalog.BrandID("Viejo"), catalog.CigarID("Viejo", "Robusto")
			if _, err := old.ExecContext(ctx, old.Rebind(`INSERT INTO brands (id, name, country) VALUES (?, ?, ?)`), oldBrand, "Viejo", "Cuba"); err != nil {
				t.Fatal(err)
			}
			if _, err := old.ExecContext(ctx, old.Rebind(`INSERT INTO cigars (id, number, brand_id, name, origin) VALUES (?, ?, ?, ?, ?)`), oldCigar, 1, oldBrand, "Robusto", "Cuba"); err != nil {
				t.Fatal(err)
			}
			if _, err := old.ExecContext(ctx, `UPDATE catalog_version SET version = 3 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			old.Close()
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))

			write := func(fn func(w catalog.Writer) error) int64 {
				t.Helper()
				if err := st.Write(ctx, fn); err != nil {
					t.Fatal(err)
				}
				v, err := st.Version(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			cigar := func(brand, name string) *catalog.Cigar {
				return &catalog.Cigar{ID: catalog.CigarID(brand, name), BrandID: catalog.BrandID(brand), Name: name, Origin: "Nicaragua"}
			}
			padron := &catalog.Brand{ID: catalog.BrandID("Padrón"), Name: "Padrón"}
			a1, a2 := cigar("Padrón", "1964 Exclusivo"), cigar("Padrón", "1926 No. 9")
			v1 := write(func(w catalog.Writer) error {
				if err := w.UpsertBrand(ctx, padron); err != nil {
					return err
				}
				for _, c := range []*catalog.Cigar{a1, a2} {
					if _, err := w.UpsertCigar(ctx, c); err != nil {
						return err
					}
				}
				return nil
			})
			v2 := write(func(w catalog.Writer) error { // products only
				return w.UpsertProduct(ctx, &catalog.Product{ID: catalog.ProductID("00012345678905"), GTIN: "00012345678905", Name: "Box", Kind: "box", Published: true})
			})
			a1.Name = "1964 Anniversary Exclusivo"
			oliva := &catalog.Brand{ID: catalog.BrandID("Oliva"), Name: "Oliva", Aliases: []string{"OSV"}}
			b1 := cigar("Oliva", "Serie V Torpedo")
			v3 := write(func(w catalog.Writer) error {
				if err := w.UpsertBrand(ctx, oliva); err != nil {
					return err
				}
				for _, c := range []*catalog.Cigar{a1, b1} {
					if _, err := w.UpsertCigar(ctx, c); err != nil {
						return err
					}
				}
				return nil
			})
			if !(3 < v1 && v1 < v2 && v2 < v3) {
				t.Fatalf("versions %d, %d, %d after 3: each write moves the version once", v1, v2, v3)
			}

			for _, tt := range []struct {
				since          int64
				brands, cigars []string // names
			}{
				{0, []string{"Oliva", "Padrón"}, []string{"1926 No. 9", "1964 Anniversary Exclusivo", "Serie V Torpedo"}},
				{v1 - 1, []string{"Oliva", "Padrón"}, []string{"1926 No. 9", "1964 Anniversary Exclusivo", "Serie V Torpedo"}},
				{v1, []string{"Oliva"}, []string{"1964 Anniversary Exclusivo", "Serie V Torpedo"}},
				{v2, []string{"Oliva"}, []string{"1964 Anniversary Exclusivo", "Serie V Torpedo"}},
				{v3, nil, nil},
			} {
				ch, err := st.ChangesSince(ctx, tt.since)
				if err != nil {
					t.Fatal(err)
				}
				var brands, cigars []string
				for _, b := range ch.Brands {
					brands = append(brands, b.Name)
				}
				for _, c := range ch.Cigars {
					cigars = append(cigars, c.Name)
				}
				slices.Sort(brands)
				slices.Sort(cigars)
				if ch.Version != v3 || !slices.Equal(brands, tt.brands) || !slices.Equal(cigars, tt.cigars) {
					t.Errorf("changes since %d: version %d, brands %q, cigars %q; want %d, %q, %q", tt.since, ch.Version, brands, cigars, v3, tt.brands, tt.cigars)
				}
			}
			ch, err := st.ChangesSince(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range ch.Brands {
				if b.ID == oliva.ID && !slices.Equal(b.Aliases, oliva.Aliases) {
					t.Errorf("a changed brand reads back as %+v", b)
				}
			}
		})
	}
}

// TestChangesSinceMissesNoConcurrentWrite follows the store as a search index
// does (read the changes since the version held, then hold the version read)
// while writers commit concurrently: every cigar written is seen, though the
// reader never reads the catalog whole.
func TestChangesSinceMissesNoConcurrentWrite(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			brand := &catalog.Brand{ID: catalog.BrandID("Concurrente"), Name: "Concurrente"}
			if err := st.Write(ctx, func(w catalog.Writer) error { return w.UpsertBrand(ctx, brand) }); err != nil {
				t.Fatal(err)
			}
			held, err := st.Version(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const writers, each = 6, 8
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						name := fmt.Sprintf("Vitola %d-%d", g, i)
						c := &catalog.Cigar{ID: catalog.CigarID(brand.Name, name), BrandID: brand.ID, Name: name, Origin: "Cuba"}
						errs <- st.Write(ctx, func(w catalog.Writer) error { _, err := w.UpsertCigar(ctx, c); return err })
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			seen := map[string]bool{}
			follow := func() {
				ch, err := st.ChangesSince(ctx, held)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range ch.Cigars {
					seen[c.Name] = true
				}
				held = ch.Version
			}
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
				}
				follow()
			}
			follow()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(seen) != writers*each {
				t.Fatalf("the follower saw %d of the %d cigars written", len(seen), writers*each)
			}
		})
	}
}

// TestWatchTellsOfWrites: Watch tells once it watches, then of each write
// committed by another handle on the store (another process, as an import
// is) soon after it commits, and of none rolled back; on PostgreSQL, not of
// a write to another store's catalog in the same database, and it ends with
// an error when its connection drops.
func TestWatchTellsOfWrites(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			db := sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations)
			writer := sqlstore.New(db)
			w := sqldbtest.StartWatch(t, ctx, st.Watch)
			quiet := func(what string) { t.Helper(); w.Quiet(what, 10*sqldb.PollEvery) }
			w.Told("watching")
			quiet("nothing")

			brand := &catalog.Brand{ID: catalog.BrandID("Vigía"), Name: "Vigía"}
			start := time.Now()
			if err := writer.Write(ctx, func(w catalog.Writer) error { return w.UpsertBrand(ctx, brand) }); err != nil {
				t.Fatal(err)
			}
			w.Told("a write")
			t.Logf("told %s after the write returned", time.Since(start).Round(time.Millisecond))
			quiet("one write twice")

			failed := fmt.Errorf("no")
			if err := writer.Write(ctx, func(w catalog.Writer) error { w.UpsertBrand(ctx, brand); return failed }); err != failed {
				t.Fatalf("rolled-back write: %v", err)
			}
			quiet("a rolled-back write")

			if cfg.DatabaseURL != "" {
				other := cfg
				other.SchemaPrefix += "x"
				t.Cleanup(func() { sqldbtest.DropSchemas(t, cfg.DatabaseURL, other.SchemaPrefix) })
				elsewhere := sqlstore.New(sqldbtest.MustOpen(t, other, sqlstore.StoreName, sqlstore.Migrations))
				if err := elsewhere.Write(ctx, func(w catalog.Writer) error { return w.UpsertBrand(ctx, brand) }); err != nil {
					t.Fatal(err)
				}
				quiet("another store's write")

				// A listening connection that drops ends the watch with an
				// error (follow starts it again; its poll goes on meanwhile).
				if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN "`+cfg.SchemaPrefix+`catalog.%'`); err != nil {
					t.Fatal(err)
				}
				if err := w.Stopped(); err == nil || ctx.Err() != nil {
					t.Fatalf("the watch ended with %v when its connection dropped", err)
				}
				return
			}
			cancel()
			w.Stopped()
		})
	}
}

// TestUpsertMany: UpsertCigars and UpsertProducts over more rows than one
// statement writes do what UpsertCigar and UpsertProduct do for each: new
// cigars numbered on from the catalog's last, existing ones keeping their
// number (and their aliases when given none), products' contents replaced;
// an ID given twice is refused.
func TestUpsertMany(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			brand := &catalog.Brand{ID: catalog.BrandID("Lotes"), Name: "Lotes"}
			cigar := func(i int, aliases []string) *catalog.Cigar {
				name := fmt.Sprintf("Lote %d", i)
				return &catalog.Cigar{ID: catalog.CigarID(brand.Name, name), BrandID: brand.ID, Name: name, Origin: "Cuba", Aliases: aliases}
			}
			product := func(i int, cigars ...int) *catalog.Product {
				gtin := fmt.Sprintf("0%012d", i)
				p := &catalog.Product{ID: catalog.ProductID(gtin), GTIN: gtin, Name: gtin, Kind: "pack", Published: true}
				for _, c := range cigars {
					p.Contents = append(p.Contents, catalog.ProductContent{CigarID: cigar(c, nil).ID, Quantity: c + 1})
				}
				return p
			}
			write := func(fn func(w catalog.Writer) error) error { return st.Write(ctx, fn) }
			if err := write(func(w catalog.Writer) error {
				if err := w.UpsertBrand(ctx, brand); err != nil {
					return err
				}
				_, err := w.UpsertCigar(ctx, cigar(0, []string{"first"}))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var cs []*catalog.Cigar
			for i := range 250 {
				cs = append(cs, cigar(i, nil))
			}
			var created []bool
			if err := write(func(w catalog.Writer) (err error) { created, err = w.UpsertCigars(ctx, cs); return err }); err != nil {
				t.Fatal(err)
			}
			for i, c := range cs {
				if created[i] != (i > 0) || c.Number != i+1 {
					t.Fatalf("cigar %d: created %v, number %d; want %v, %d", i, created[i], c.Number, i > 0, i+1)
				}
			}
			if got, err := st.Cigar(ctx, cs[0].ID); err != nil || strings.Join(got.Aliases, "|") != "first" || got.Number != 1 {
				t.Fatalf("the cigar there before: %+v, %v", got, err)
			}
			var ps []*catalog.Product
			for i := range 150 {
				ps = append(ps, product(i, i, i+1))
			}
			if err := write(func(w catalog.Writer) error { return w.UpsertProducts(ctx, ps) }); err != nil {
				t.Fatal(err)
			}
			if err := write(func(w catalog.Writer) error { return w.UpsertProducts(ctx, []*catalog.Product{product(7, 3)}) }); err != nil {
				t.Fatal(err)
			}
			for i, want := range map[int][]catalog.ProductContent{
				7:   {{CigarID: cigar(3, nil).ID, Quantity: 4}},
				149: {{CigarID: cigar(149, nil).ID, Quantity: 150}, {CigarID: cigar(150, nil).ID, Quantity: 151}},
			} {
				p, err := st.Product(ctx, product(i).ID)
				if err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(want, func(a, b catalog.ProductContent) int { return strings.Compare(a.CigarID, b.CigarID) })
				if !slices.Equal(p.Contents, want) {
					t.Fatalf("product %d contents: %+v, want %+v", i, p.Contents, want)
				}
			}
			err := write(func(w catalog.Writer) error {
				_, err := w.UpsertCigars(ctx, []*catalog.Cigar{cigar(300, nil), cigar(300, nil)})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "given twice") {
				t.Fatalf("a cigar given twice: %v", err)
			}
		})
	}
}
