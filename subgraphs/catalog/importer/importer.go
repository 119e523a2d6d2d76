// Package importer loads a catalog from JSON Lines, one cigar per line:
//
//	{"brand": "Padrón", "brandCountry": "Nicaragua", "name": "1964 Anniversary Series Exclusivo",
//	 "aliases": ["1964 Exclusivo"], "origin": "Nicaragua", "wrapper": [component], "binder": [...], "filler": [...],
//	 "products": [{"gtin": "...", "name": "...", "kind": "box", "quantity": 20, "published": true}]}
//
// Every line is checked before anything is written; the whole file then lands in
// one transaction, so a bad line leaves the catalog as it was. Cigars are upserted
// by brand and name, products by GTIN: importing the same file again changes
// nothing. brandCountry is optional: a new brand without it takes the origin
// its cigars in the file agree on, else its country stays unknown (null).
// brandAliases and aliases, when present, replace the brand's or the cigar's
// aliases; when absent, those stored stay.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vitolahq/vitola/internal/jsonlines"
	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Record is one line of the file.
type Record struct {
	// Brand is the brand's name (required). BrandCountry is optional: a brand
	// new to the catalog without it takes the origin its cigars in the file
	// agree on, else none. BrandAliases are other names people type that
	// resolve cannot derive from the name ("Monte"; initialisms such as "RyJ"
	// are derived).
	Brand        string   `json:"brand"`
	BrandCountry string   `json:"brandCountry,omitempty"`
	BrandAliases []string `json:"brandAliases,omitempty"`
	// Name is the cigar's name, line and vitola (required). Aliases are other
	// names of the whole cigar, brand and line included ("PSD4"): resolve reads
	// them as its name.
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	// Origin is the canonical country name where it is made (required).
	Origin   string              `json:"origin"`
	Wrapper  []catalog.Component `json:"wrapper"`
	Binder   []catalog.Component `json:"binder"`
	Filler   []catalog.Component `json:"filler"`
	Products []Product           `json:"products,omitempty"`
	// Line is where the record stands in its file.
	Line int `json:"-"`
}

// Product is a product of the cigar.
type Product struct {
	// GTIN is the product's barcode: UPC-A, EAN-13, EAN-8, UPC-E or GTIN-14.
	GTIN string `json:"gtin"`
	Name string `json:"name"`
	// Kind is box, pack or single (default box).
	Kind string `json:"kind,omitempty"`
	// Quantity is how many of the cigar it holds (default 1).
	Quantity int `json:"quantity,omitempty"`
	// Published products are visible on public routes (default true).
	Published *bool `json:"published,omitempty"`
	// Synthetic marks a made-up code, as in the demo catalog (default false).
	Synthetic bool `json:"synthetic,omitempty"`
}

// LineError is a problem with one line of the file.
type LineError = jsonlines.LineError

var kinds = map[string]bool{"box": true, "pack": true, "single": true}

// maxAliases bounds the aliases of a brand or a cigar.
const maxAliases = 20

// Parse reads and checks every line. It stops at the first bad line. Blank lines
// are skipped.
func Parse(r io.Reader) ([]Record, error) {
	seenCigar := map[string]int{}
	seenGTIN := map[string]int{}
	return jsonlines.Read(r, "a cigar", func(rec *Record, n int) error {
		rec.Line = n
		if err := rec.check(); err != nil {
			return err
		}
		key := rec.Brand + "\x00" + rec.Name
		if prev, dup := seenCigar[key]; dup {
			return fmt.Errorf("%s %s is already on line %d", rec.Brand, rec.Name, prev)
		}
		seenCigar[key] = n
		for i := range rec.Products {
			g := rec.Products[i].GTIN
			if prev, dup := seenGTIN[g]; dup {
				return fmt.Errorf("product GTIN %s is already on line %d", g, prev)
			}
			seenGTIN[g] = n
		}
		return nil
	})
}

// check validates a record and fills in defaults.
func (r *Record) check() error {
	for _, f := range []struct {
		name  string
		value *string
	}{{"brand", &r.Brand}, {"name", &r.Name}, {"origin", &r.Origin}} {
		v, err := jsonlines.Text(f.name, *f.value, 200)
		if err != nil {
			return err
		}
		*f.value = v
	}
	for _, f := range []struct {
		name    string
		aliases []string
	}{{"brandAliases", r.BrandAliases}, {"aliases", r.Aliases}} {
		if len(f.aliases) > maxAliases {
			return fmt.Errorf("%s: more than %d", f.name, maxAliases)
		}
		for i, a := range f.aliases {
			v, err := jsonlines.Text(fmt.Sprintf("%s[%d]", f.name, i), a, 100)
			if err != nil {
				return err
			}
			f.aliases[i] = v
		}
	}
	for _, part := range []struct {
		name  string
		comps []catalog.Component
	}{{"wrapper", r.Wrapper}, {"binder", r.Binder}, {"filler", r.Filler}} {
		for i, c := range part.comps {
			if c.Region == "" || c.Type == "" || c.Label == "" {
				return fmt.Errorf("%s[%d] needs region, type and label", part.name, i)
			}
			if c.Year != nil && (*c.Year < 1900 || *c.Year > 2100) {
				return fmt.Errorf("%s[%d].year %d is not a plausible vintage", part.name, i, *c.Year)
			}
		}
	}
	for i := range r.Products {
		p := &r.Products[i]
		g, err := catalog.NormalizeGTIN(p.GTIN)
		if err != nil {
			return fmt.Errorf("products[%d].gtin %q: %w", i, p.GTIN, err)
		}
		p.GTIN = g
		if strings.TrimSpace(p.Name) == "" {
			return fmt.Errorf("products[%d].name is required", i)
		}
		if p.Kind == "" {
			p.Kind = "box"
		}
		if !kinds[p.Kind] {
			return fmt.Errorf("products[%d].kind %q: want box, pack or single", i, p.Kind)
		}
		if p.Quantity == 0 {
			p.Quantity = 1
		}
		if p.Quantity < 1 || p.Quantity > 10000 {
			return fmt.Errorf("products[%d].quantity must be 1 to 10000", i)
		}
	}
	return nil
}

// Summary says what an import did.
type Summary struct {
	Cigars, NewCigars, NewBrands, Products int
	// CountryFromOrigin are the new brands given no brandCountry whose country
	// was taken from their cigars' common origin; CountryUnknown, those whose
	// cigars disagree, left without a country. Both in file order.
	CountryFromOrigin, CountryUnknown []string
}

// applyBatch is how many records Apply writes at a time: the cigars and
// products of a batch go to the store together (UpsertCigars,
// UpsertProducts), and progress is reported after each.
const applyBatch = 500

// Apply writes the records in one transaction, reporting progress.
func Apply(ctx context.Context, store catalog.Store, recs []Record, progress func(done, total int)) (Summary, error) {
	var sum Summary
	origins := commonOrigins(recs)
	err := store.Write(ctx, func(w catalog.Writer) error {
		sum = Summary{}
		brands := map[string]*catalog.Brand{}
		for done := 0; done < len(recs); {
			batch := recs[done:min(done+applyBatch, len(recs))]
			cigars := make([]*catalog.Cigar, len(batch))
			var products []*catalog.Product
			for i, rec := range batch {
				b, err := brand(ctx, w, brands, rec, origins, &sum)
				if err != nil {
					return &LineError{Line: rec.Line, Err: err}
				}
				c := &catalog.Cigar{
					ID: catalog.CigarID(b.Name, rec.Name), BrandID: b.ID, Name: rec.Name, Origin: rec.Origin,
					Wrapper: rec.Wrapper, Binder: rec.Binder, Filler: rec.Filler, Aliases: rec.Aliases,
				}
				cigars[i] = c
				for _, p := range rec.Products {
					published := p.Published == nil || *p.Published
					products = append(products, &catalog.Product{
						ID: catalog.ProductID(p.GTIN), GTIN: p.GTIN, Name: p.Name, Kind: p.Kind,
						Synthetic: p.Synthetic, Published: published,
						Contents: []catalog.ProductContent{{CigarID: c.ID, Quantity: p.Quantity}},
					})
				}
			}
			created, err := w.UpsertCigars(ctx, cigars)
			if err != nil {
				return fmt.Errorf("lines %d to %d: %w", batch[0].Line, batch[len(batch)-1].Line, err)
			}
			for _, c := range created {
				if c {
					sum.NewCigars++
				}
			}
			if err := w.UpsertProducts(ctx, products); err != nil {
				return fmt.Errorf("lines %d to %d: %w", batch[0].Line, batch[len(batch)-1].Line, err)
			}
			sum.Cigars += len(batch)
			sum.Products += len(products)
			done += len(batch)
			jsonlines.Progress(progress, done, len(recs))
		}
		return nil
	})
	return sum, err
}

// commonOrigins maps each brand of the file to the origin all its cigars in
// the file share, or "" when they differ.
func commonOrigins(recs []Record) map[string]string {
	origins := map[string]string{}
	for _, rec := range recs {
		if o, seen := origins[rec.Brand]; !seen {
			origins[rec.Brand] = rec.Origin
		} else if o != rec.Origin {
			origins[rec.Brand] = ""
		}
	}
	return origins
}

// brand finds or creates the record's brand (once per import). A new brand
// without brandCountry takes its cigars' common origin (origins), else no
// country.
func brand(ctx context.Context, w catalog.Writer, seen map[string]*catalog.Brand, rec Record, origins map[string]string, sum *Summary) (*catalog.Brand, error) {
	if b, ok := seen[rec.Brand]; ok {
		return b, nil
	}
	b, err := w.BrandByName(ctx, rec.Brand)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		b = &catalog.Brand{ID: catalog.BrandID(rec.Brand), Name: rec.Brand, Aliases: rec.BrandAliases}
		switch country := rec.BrandCountry; {
		case country != "":
			b.Country = &country
		case origins[rec.Brand] != "":
			country = origins[rec.Brand]
			b.Country = &country
			sum.CountryFromOrigin = append(sum.CountryFromOrigin, rec.Brand)
		default:
			sum.CountryUnknown = append(sum.CountryUnknown, rec.Brand)
		}
		sum.NewBrands++
	case err != nil:
		return nil, err
	default:
		if rec.BrandCountry != "" {
			b.Country = &rec.BrandCountry
		}
		if rec.BrandAliases != nil {
			b.Aliases = rec.BrandAliases
		}
	}
	if err := w.UpsertBrand(ctx, b); err != nil {
		return nil, err
	}
	seen[rec.Brand] = b
	return b, nil
}
