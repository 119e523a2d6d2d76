package sqlstore_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

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
