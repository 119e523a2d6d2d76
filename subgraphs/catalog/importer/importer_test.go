package importer_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
)

const leaf = `{"region": "Nicaragua", "type": "Habano", "shade": null, "year": null, "label": "Nicaraguan Habano"}`

func line(brand, name, extra string) string {
	return `{"brand": "` + brand + `", "brandCountry": "Nicaragua", "name": "` + name + `", "origin": "Nicaragua", "wrapper": [` + leaf + `], "binder": [], "filler": [` + leaf + `]` + extra + `}`
}

func TestParseReportsTheBadLine(t *testing.T) {
	good := line("Casa Prueba", "Robusto", "")
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", good + "\n{nope\n", "line 2: not a cigar object"},
		{"missing name", good + "\n\n" + line("Casa Prueba", "", ""), "line 3: name is required"},
		{"unknown field", `{"brand": "B", "name": "N", "origin": "O", "colour": "red"}`, `line 1: not a cigar object: json: unknown field "colour"`},
		{"bad gtin", line("B", "N", `, "products": [{"gtin": "4006381333932", "name": "Box"}]`), "line 1: products[0].gtin"},
		{"bad kind", line("B", "N", `, "products": [{"gtin": "4006381333931", "name": "Box", "kind": "crate"}]`), "line 1: products[0].kind"},
		{"component without label", `{"brand": "B", "name": "N", "origin": "O", "wrapper": [{"region": "X", "type": "Y"}]}`, "line 1: wrapper[0] needs region, type and label"},
		{"duplicate cigar", good + "\n" + good, "line 2: Casa Prueba Robusto is already on line 1"},
		{"empty alias", line("B", "N", `, "aliases": ["BN", " "]`), "line 1: aliases[1] is required"},
		{"long brand alias", line("B", "N", `, "brandAliases": ["`+strings.Repeat("b", 101)+`"]`), "line 1: brandAliases[0] is longer than 100 characters"},
		{"implausible year", `{"brand": "B", "name": "N", "origin": "O", "filler": [{"region": "X", "type": "Y", "label": "Z", "year": 1066}]}`, "line 1: filler[0].year"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := importer.Parse(strings.NewReader(tt.file))
			var le *importer.LineError
			if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
	recs, err := importer.Parse(strings.NewReader(line("B", "N", `, "products": [{"gtin": "04252614", "name": "Single"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	p := recs[0].Products[0]
	if p.GTIN != "00042100005264" || p.Kind != "box" || p.Quantity != 1 || p.Published != nil {
		t.Fatalf("defaults: %+v", p)
	}
}

func TestApplyIsAllOrNothingAndIdempotent(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		file := line("Casa Prueba", "Robusto", `, "products": [{"gtin": "4006381333931", "name": "Box of 20", "quantity": 20}, {"gtin": "036000291452", "name": "Hidden single", "kind": "single", "published": false}]`) + "\n" +
			line("Casa Prueba", "Toro", "") + "\n"
		recs, err := importer.Parse(strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		v0, _ := st.Version(ctx)
		sum, err := importer.Apply(ctx, st, recs, nil)
		if err != nil || !reflect.DeepEqual(sum, importer.Summary{Cigars: 2, NewCigars: 2, NewBrands: 1, Products: 2}) {
			t.Fatalf("first import: %+v, %v", sum, err)
		}
		if v1, _ := st.Version(ctx); v1 == v0 {
			t.Fatal("the catalog version did not move")
		}
		cigars, _ := st.AllCigars(ctx)
		again, err := importer.Apply(ctx, st, recs, nil)
		if err != nil || again.NewCigars != 0 || again.NewBrands != 0 {
			t.Fatalf("second import: %+v, %v", again, err)
		}
		after, _ := st.AllCigars(ctx)
		if len(after) != 2 || after[0].Number != cigars[0].Number || after[1].Number != cigars[1].Number {
			t.Fatalf("re-import changed cigars: %+v", after)
		}
		if p, _ := st.ProductByGTIN(ctx, "04006381333931"); p == nil || p.Contents[0].Quantity != 20 {
			t.Fatalf("product: %+v", p)
		}
		if _, err := st.ProductByGTIN(ctx, "00036000291452"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unpublished product visible: %v", err)
		}

		// A failure once every line is written (the store fails before the
		// commit) leaves nothing behind.
		bad, _ := importer.Parse(strings.NewReader(line("Casa Prueba", "Corona", "") + "\n" +
			`{"brand": "Nueva Marca", "name": "Lancero", "origin": "Honduras"}`))
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if _, err := importer.Apply(cctx, st, bad, func(done, total int) {
			if done == total {
				cancel()
			}
		}); err == nil {
			t.Fatal("an import whose store failed half-way succeeded")
		}
		if all, _ := st.AllCigars(ctx); len(all) != 2 {
			t.Fatalf("a failed import left %d cigars", len(all))
		}
	})
}

// TestApplyWithoutBrandCountry imports the documented format, whose lines need
// not name the brand's country: a new brand takes the origin its cigars in the
// file agree on, else no country, and the summary says which.
func TestApplyWithoutBrandCountry(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		cigar := func(brand, name, origin string) string {
			return `{"brand": "` + brand + `", "name": "` + name + `", "origin": "` + origin + `", "wrapper": [` + leaf + `], "binder": [], "filler": [], "products": []}`
		}
		file := strings.Join([]string{
			cigar("Casa Cubana", "Robusto", "Cuba"),
			cigar("Dos Patrias", "Toro", "Nicaragua"),
			cigar("Casa Cubana", "Lancero", "Cuba"),
			cigar("Dos Patrias", "Corona", "Honduras"),
			line("Con País", "Churchill", ""), // brandCountry Nicaragua
		}, "\n")
		recs, err := importer.Parse(strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := importer.Apply(ctx, st, recs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.NewBrands != 3 || sum.NewCigars != 5 ||
			strings.Join(sum.CountryFromOrigin, ",") != "Casa Cubana" || strings.Join(sum.CountryUnknown, ",") != "Dos Patrias" {
			t.Fatalf("summary %+v", sum)
		}
		countries := map[string]string{}
		brands, _ := st.AllBrands(ctx)
		for _, b := range brands {
			countries[b.Name] = "<unknown>"
			if b.Country != nil {
				countries[b.Name] = *b.Country
			}
		}
		want := map[string]string{"Casa Cubana": "Cuba", "Dos Patrias": "<unknown>", "Con País": "Nicaragua"}
		for name, c := range want {
			if countries[name] != c {
				t.Errorf("%s: country %q, want %q", name, countries[name], c)
			}
		}

		// Again: the brands exist, nothing is new and no country changes.
		again, err := importer.Apply(ctx, st, recs, nil)
		if err != nil || again.NewBrands != 0 || again.CountryFromOrigin != nil || again.CountryUnknown != nil {
			t.Fatalf("second import: %+v, %v", again, err)
		}
		if b, _ := st.Brand(ctx, catalog.BrandID("Dos Patrias")); b == nil || b.Country != nil {
			t.Fatalf("Dos Patrias after a re-import: %+v", b)
		}
	})
}

// TestImportedAliasesResolve imports cigars with the aliases field and a brand
// with brandAliases, builds the search index from the store as a replica does,
// and resolves the aliases; a re-import without the field keeps them.
func TestImportedAliasesResolve(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		file := line("Casa Prueba", "Reserva Especial No. 4", `, "brandAliases": ["CP"], "aliases": ["CPRE4", "Reserva 4"]`) + "\n" +
			line("Casa Prueba", "Reserva Especial No. 5", `, "aliases": ["CPRE5"]`) + "\n"
		resolve := func(query string) string {
			t.Helper()
			ix, err := search.BuildFrom(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			hits, resolved := ix.Resolve(query, "", 5)
			if !resolved {
				return "<unresolved>"
			}
			return hits[0].Brand.Name + " " + hits[0].Cigar.Name
		}
		for i, f := range []string{file, strings.ReplaceAll(strings.ReplaceAll(file, `, "brandAliases": ["CP"], "aliases": ["CPRE4", "Reserva 4"]`, ""), `, "aliases": ["CPRE5"]`, "")} {
			recs, err := importer.Parse(strings.NewReader(f))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := importer.Apply(ctx, st, recs, nil); err != nil {
				t.Fatal(err)
			}
			for query, want := range map[string]string{
				"CPRE4":                 "Casa Prueba Reserva Especial No. 4",
				"cpre 5":                "Casa Prueba Reserva Especial No. 5",
				"Reserva 4 cigar":       "Casa Prueba Reserva Especial No. 4",
				"CP Reserva Especial V": "Casa Prueba Reserva Especial No. 5",
				"CP Reserva Especial":   "<unresolved>",
			} {
				if got := resolve(query); got != want {
					t.Errorf("import %d: %q resolved to %s, want %s", i+1, query, got, want)
				}
			}
		}
	})
}
