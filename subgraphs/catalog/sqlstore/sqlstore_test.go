package sqlstore_test

import (
	"context"
	"io/fs"
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
