package compare_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

// The files both sides import are in the import format: the working tree's
// importer accepts them whole, every GTIN is valid and unique, and a copy's
// cigars carry the words the live import searches for.
func TestEncodeCatalog(t *testing.T) {
	var large, batch bytes.Buffer
	n, err := compare.EncodeCatalog(&large, 0, 2, 0)
	if err != nil || n < 2000 {
		t.Fatalf("two copies: %d cigars, %v", n, err)
	}
	m, err := compare.EncodeCatalog(&batch, 5, 6, 1000)
	if err != nil || m != 1000 {
		t.Fatalf("a batch of copy 5: %d cigars, %v", m, err)
	}
	gtins := map[string]bool{}
	for _, file := range []*bytes.Buffer{&large, &batch} {
		text := file.String()
		recs, err := importer.Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			for _, p := range r.Products {
				g, err := catalog.NormalizeGTIN(p.GTIN)
				if err != nil || gtins[g] {
					t.Fatalf("GTIN %s: invalid or repeated (%v)", p.GTIN, err)
				}
				gtins[g] = true
			}
		}
	}
	names := func(b *bytes.Buffer) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			var rec struct{ Name, BrandCountry string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.BrandCountry == "" {
				t.Fatalf("line %s: %v", l, err)
			}
			out = append(out, rec.Name)
		}
		return out
	}
	for _, name := range names(&batch) {
		if !strings.Contains(name, compare.CopyWord(5)+" ") {
			t.Fatalf("batch of copy 5: %q", name)
		}
	}
	copies := map[bool]int{}
	for _, name := range names(&large) {
		copies[strings.Contains(name, compare.CopyWord(1)+" ")]++
	}
	if copies[true] != n/2 || copies[false] != n/2 || strings.Contains(large.String(), "Lote 0") {
		t.Fatalf("copy 0 has the demo's names, copy 1 holds %q: %v", compare.CopyWord(1), copies)
	}
}
