package importer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
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
		if err != nil || sum != (importer.Summary{Cigars: 2, NewCigars: 2, NewBrands: 1, Products: 2}) {
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

		// A failure half-way (a new brand without a country) leaves nothing behind.
		bad, _ := importer.Parse(strings.NewReader(line("Casa Prueba", "Corona", "") + "\n" +
			`{"brand": "Nueva Marca", "name": "Lancero", "origin": "Honduras"}`))
		if _, err := importer.Apply(ctx, st, bad, nil); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("want a line 2 error, got %v", err)
		}
		if all, _ := st.AllCigars(ctx); len(all) != 2 {
			t.Fatalf("a failed import left %d cigars", len(all))
		}
	})
}
