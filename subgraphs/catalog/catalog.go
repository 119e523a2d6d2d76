// Package catalog is the catalog subgraph's domain: brands, cigars with their
// tobacco components, and products with barcodes. Storage lives in sqlstore, the
// GraphQL API in graph.
package catalog

import (
	"context"
	"errors"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/pagination"
)

// Brand is a cigar brand.
type Brand struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Country is the canonical country name, nil when unknown (an import
	// that did not say and whose cigars disagree on their origin).
	Country *string  `json:"country"`
	Aliases []string `json:"aliases,omitempty"`
}

// Component is one tobacco leaf of a cigar's wrapper, binder or filler.
type Component struct {
	Region string  `json:"region"`
	Type   string  `json:"type"`
	Shade  *string `json:"shade"`
	Year   *int    `json:"year"`
	Label  string  `json:"label"`
}

// Cigar is one line in one vitola, as sold.
type Cigar struct {
	ID string `json:"id"`
	// Number is the cigar's integer catalog number (the match result's cigar_id).
	Number  int         `json:"-"`
	BrandID string      `json:"-"`
	Name    string      `json:"name"`
	Origin  string      `json:"origin"`
	Wrapper []Component `json:"wrapper"`
	Binder  []Component `json:"binder"`
	Filler  []Component `json:"filler"`
	// Aliases are other names people give the cigar as a whole, brand and
	// line included ("PSD4" for Partagás Serie D No. 4): data for resolve.
	// Upserting a cigar with nil Aliases keeps those stored.
	Aliases []string `json:"-"`
}

// Product is a sellable unit (a box, a pack, a single) with a barcode.
type Product struct {
	ID        string           `json:"id"`
	GTIN      string           `json:"gtin"` // GTIN-14
	Name      string           `json:"name"`
	Kind      string           `json:"kind"`
	Synthetic bool             `json:"synthetic"`
	Published bool             `json:"-"`
	Contents  []ProductContent `json:"contents"`
}

// ProductContent says how many of a cigar a product holds.
type ProductContent struct {
	CigarID  string `json:"cigarId"`
	Quantity int    `json:"quantity"`
}

// Page is a validated connection page; stores read it with its Keyset method
// (positions are IDs).
type Page = pagination.Request

// Errors.
var (
	ErrNotFound = errors.New("not found")
)

// Store is the catalog's storage. Listing methods return up to page.Size+1 items
// in the order Page.Keyset reads them, so that callers can tell whether another
// page exists.
type Store interface {
	Brand(ctx context.Context, id string) (*Brand, error)
	BrandsByIDs(ctx context.Context, ids []string) ([]*Brand, error)
	Brands(ctx context.Context, page Page) ([]*Brand, error)
	Cigar(ctx context.Context, id string) (*Cigar, error)
	CigarsByIDs(ctx context.Context, ids []string) ([]*Cigar, error)
	CigarsOfBrand(ctx context.Context, brandID string, page Page) ([]*Cigar, error)
	// AllBrands, AllCigars, Version and ChangesSince feed the search index.
	AllBrands(ctx context.Context) ([]*Brand, error)
	AllCigars(ctx context.Context) ([]*Cigar, error)
	Version(ctx context.Context) (int64, error)
	ChangesSince(ctx context.Context, version int64) (*Changes, error)
	Product(ctx context.Context, id string) (*Product, error)
	ProductByGTIN(ctx context.Context, gtin string) (*Product, error)
	Products(ctx context.Context, page Page) ([]*Product, error)

	// Write runs fn in one transaction: what it writes lands together or not at
	// all, and the catalog's version moves once.
	Write(ctx context.Context, fn func(w Writer) error) error
	Counts(ctx context.Context) (brands, cigars, products int, err error)
	Ping(ctx context.Context) error
}

// Changes are the brands and cigars written after a version of the catalog:
// what an index holding that version must apply to catch up.
type Changes struct {
	// Version is the catalog's version when the changes were read: they hold
	// every write up to it (and may hold some after it, which applying again is
	// harmless as writes are upserts).
	Version int64
	Brands  []*Brand
	Cigars  []*Cigar
}

// Writer writes inside a Store.Write transaction.
type Writer interface {
	// BrandByName finds a brand by its exact name (ErrNotFound).
	BrandByName(ctx context.Context, name string) (*Brand, error)
	UpsertBrand(ctx context.Context, b *Brand) error
	// UpsertCigar gives a new cigar the next catalog number and keeps an existing
	// one's; it reports whether the cigar is new.
	UpsertCigar(ctx context.Context, c *Cigar) (created bool, err error)
	// UpsertCigars upserts cigars of distinct IDs as UpsertCigar does each, in
	// a few statements (an import's thousand): created[i] says whether cs[i]
	// is new.
	UpsertCigars(ctx context.Context, cs []*Cigar) (created []bool, err error)
	UpsertProduct(ctx context.Context, p *Product) error
	// UpsertProducts upserts products of distinct IDs as UpsertProduct does
	// each, in a few statements.
	UpsertProducts(ctx context.Context, ps []*Product) error
}

// BrandID is the ID a brand gets from its name: imports and seeds upsert by it,
// and other subgraphs' seeds can refer to it.
func BrandID(name string) string { return ids.Derive(ids.Brand, name) }

// CigarID is the ID of the cigar called name of the brand called brand: imports
// upsert cigars keyed by brand and name.
func CigarID(brand, name string) string { return ids.Derive(ids.Cigar, brand+"\x00"+name) }

// ProductID is the ID of the product with a GTIN-14.
func ProductID(gtin14 string) string { return ids.Derive(ids.Product, gtin14) }
