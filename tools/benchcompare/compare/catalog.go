package compare

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/catalog/importer"
)

// The catalogs both sides import are written here once, in the import format
// docs/operations/importing.md documents (the stable interface every version's `vitola import
// catalog` reads), from the demo facts table as the search benchmarks scale it
// (demo.Facts.Scaled: copy k of a line is "<line> Lote <k>"). Each cigar comes
// with a box of 20 and a single, as the demo seeds them, so an import writes
// what a real catalog's would.

// copyWord is the word pair that names copy k's cigars in search ("lote 101"):
// the live import looks for its batch by it.
func copyWord(k int) string { return fmt.Sprintf("Lote %d", k) }

// writeCatalog writes copies [from, to) of the demo lines to path, at most
// limit cigars (0: all), and returns how many it wrote.
func writeCatalog(path string, from, to, limit int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := encodeCatalog(f, from, to, limit)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("write catalog %s: %w", path, err)
	}
	return n, nil
}

func encodeCatalog(w io.Writer, from, to, limit int) (int, error) {
	facts, err := demo.LoadFacts()
	if err != nil {
		return 0, err
	}
	brands := map[string]demo.Brand{}
	for _, b := range facts.Brands {
		brands[b.Name] = b
	}
	per := len(facts.Lines)
	scaled := facts.Scaled(to).Lines // copy k is lines [k*per, (k+1)*per)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	for k := from; k < to; k++ {
		for _, l := range scaled[k*per : (k+1)*per] {
			b := brands[l.Brand]
			for _, v := range l.Vitolas {
				if limit > 0 && n == limit {
					return n, bw.Flush()
				}
				aliases := append([]string{}, v.Aliases...)
				for _, a := range l.Aliases {
					aliases = append(aliases, a+" "+v.Name)
				}
				name := l.Name + " " + v.Name
				rec := importer.Record{Brand: l.Brand, BrandCountry: b.Country, BrandAliases: b.Aliases, Name: name, Aliases: aliases,
					Origin: l.Origin, Wrapper: l.Wrapper, Binder: l.Binder, Filler: l.Filler,
					Products: []importer.Product{
						{GTIN: gtin("23", k, n), Name: l.Brand + " " + name + ", box of 20", Kind: "box", Quantity: 20, Synthetic: true},
						{GTIN: gtin("24", k, n), Name: l.Brand + " " + name + ", single", Kind: "single", Quantity: 1, Synthetic: true},
					}}
				if err := enc.Encode(rec); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, bw.Flush()
}

// gtin is a synthetic EAN-13 from the GS1 restricted-circulation range (the
// demo's own products use prefixes 21 and 22): prefix, the copy and the
// cigar's place in the file, and the check digit. Unique per copy and place.
func gtin(prefix string, copy, i int) string {
	body := fmt.Sprintf("%s%04d%06d", prefix, copy, i)
	return body + string(catalog.CheckDigit(body))
}
