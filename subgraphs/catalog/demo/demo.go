// Package demo builds the demo catalog from a committed facts table (facts.json):
// real brands with their countries, their lines with wrapper, binder and filler,
// and each line's vitolas. A cigar is a line in a vitola. Products (a box and a
// single of every cigar) carry synthetic GTINs from the GS1 restricted-circulation
// range (prefixes 20-29), marked synthetic.
package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

//go:embed facts.json
var factsJSON []byte

// Facts is the facts table.
type Facts struct {
	Version    int     `json:"version"`
	SourceNote string  `json:"source_note"`
	Brands     []Brand `json:"brands"`
	Lines      []Line  `json:"lines"`
}

// Brand is a brand row of the facts table.
type Brand struct {
	Name    string   `json:"name"`
	Country string   `json:"country"`
	Aliases []string `json:"aliases"`
}

// Line is a product line with its blend and sizes.
type Line struct {
	Brand string `json:"brand"`
	Name  string `json:"name"`
	// Aliases are other names of the line, said with a vitola's name: "Epi"
	// makes Hoyo de Monterrey Epicure No. 2 also "Epi No. 2".
	Aliases []string            `json:"aliases,omitempty"`
	Origin  string              `json:"origin"`
	Wrapper []catalog.Component `json:"wrapper"`
	Binder  []catalog.Component `json:"binder"`
	Filler  []catalog.Component `json:"filler"`
	Vitolas []Vitola            `json:"vitolas"`
}

// Vitola is a size and shape.
type Vitola struct {
	Name     string  `json:"name"`
	LengthIn float64 `json:"length_in"`
	Ring     int     `json:"ring"`
	Shape    string  `json:"shape"`
	// Aliases name the cigar as a whole, brand and line included ("PSD4").
	Aliases []string `json:"aliases,omitempty"`
}

// LoadFacts parses the embedded facts table.
func LoadFacts() (*Facts, error) {
	var f Facts
	if err := json.Unmarshal(factsJSON, &f); err != nil {
		return nil, fmt.Errorf("demo facts: %w", err)
	}
	return &f, nil
}

// BrandID is the ID the demo gives a brand (catalog.BrandID).
func BrandID(name string) string { return catalog.BrandID(name) }

// Catalog returns the brands and cigars of the facts table, cigars in the table's
// order.
func (f *Facts) Catalog() ([]*catalog.Brand, []*catalog.Cigar) {
	brands := make([]*catalog.Brand, len(f.Brands))
	for i, b := range f.Brands {
		brands[i] = &catalog.Brand{ID: BrandID(b.Name), Name: b.Name, Country: &b.Country, Aliases: b.Aliases}
	}
	var cigars []*catalog.Cigar
	for _, l := range f.Lines {
		for _, v := range l.Vitolas {
			aliases := append([]string{}, v.Aliases...) // never nil: a seed replaces them
			for _, a := range l.Aliases {
				aliases = append(aliases, a+" "+v.Name)
			}
			cigars = append(cigars, &catalog.Cigar{
				ID: catalog.CigarID(l.Brand, l.Name+" "+v.Name), BrandID: BrandID(l.Brand),
				Name: l.Name + " " + v.Name, Origin: l.Origin,
				Wrapper: l.Wrapper, Binder: l.Binder, Filler: l.Filler, Aliases: aliases,
			})
		}
	}
	return brands, cigars
}

// Scaled returns the facts table times n, for benchmarks: copy k of each line is
// named "<line> Lote <k>", so the catalog grows n-fold with realistic words.
func (f *Facts) Scaled(n int) *Facts {
	out := *f
	out.Lines = nil
	for k := 0; k < n; k++ {
		for _, l := range f.Lines {
			if k > 0 {
				l.Name = fmt.Sprintf("%s Lote %d", l.Name, k)
			}
			out.Lines = append(out.Lines, l)
		}
	}
	return &out
}

// Seed loads the demo catalog in one transaction, reporting progress.
func Seed(ctx context.Context, store catalog.Store, progress func(done, total int)) error {
	f, err := LoadFacts()
	if err != nil {
		return err
	}
	brands, cigars := f.Catalog()
	brandName := map[string]string{}
	return store.Write(ctx, func(w catalog.Writer) error {
		for _, b := range brands {
			brandName[b.ID] = b.Name
			if err := w.UpsertBrand(ctx, b); err != nil {
				return err
			}
		}
		done := 0
		for batch := range slices.Chunk(cigars, 250) {
			if _, err := w.UpsertCigars(ctx, batch); err != nil {
				return err
			}
			var ps []*catalog.Product
			for _, c := range batch { // numbered now
				ps = append(ps, products(brandName[c.BrandID], c)...)
			}
			if err := w.UpsertProducts(ctx, ps); err != nil {
				return err
			}
			done += len(batch)
			if progress != nil {
				progress(done, len(cigars))
			}
		}
		return nil
	})
}

// products makes a box of 20 and a single of a cigar, with restricted-circulation
// GTIN-13s: "21" (box) or "22" (single), the cigar number, and a check digit.
func products(brand string, c *catalog.Cigar) []*catalog.Product {
	mk := func(prefix, kind, name string, qty int) *catalog.Product {
		body := fmt.Sprintf("%s%010d", prefix, c.Number)
		gtin13 := body + string(catalog.CheckDigit(body))
		return &catalog.Product{
			ID: catalog.ProductID("0" + gtin13), GTIN: "0" + gtin13, Name: name, Kind: kind,
			Synthetic: true, Published: true,
			Contents: []catalog.ProductContent{{CigarID: c.ID, Quantity: qty}},
		}
	}
	return []*catalog.Product{
		mk("21", "box", brand+" "+c.Name+", box of 20", 20),
		mk("22", "single", brand+" "+c.Name+", single", 1),
	}
}
