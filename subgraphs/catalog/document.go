package catalog

import (
	"encoding/json"
	"errors"
	"io"
)

// Document is a cigar as the REST routes show it: {id, name, origin, wrapper,
// binder, filler, brand: {id, name}}, encoded once. The catalog renders it for
// the REST shim, which passes it through.
type Document json.RawMessage

type brandRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type document struct {
	ID      string      `json:"id"`
	Name    string      `json:"name"`
	Origin  string      `json:"origin"`
	Wrapper []Component `json:"wrapper"`
	Binder  []Component `json:"binder"`
	Filler  []Component `json:"filler"`
	Brand   brandRef    `json:"brand"`
}

// NewDocument renders a cigar of a brand.
func NewDocument(c *Cigar, b *Brand) (Document, error) {
	d := document{ID: c.ID, Name: c.Name, Origin: c.Origin, Wrapper: nonNil(c.Wrapper), Binder: nonNil(c.Binder), Filler: nonNil(c.Filler), Brand: brandRef{b.ID, b.Name}}
	raw, err := json.Marshal(d)
	return Document(raw), err
}

func nonNil(cs []Component) []Component {
	if cs == nil {
		return []Component{}
	}
	return cs
}

type productDocument struct {
	ID        string            `json:"id"`
	GTIN      string            `json:"gtin"`
	Name      string            `json:"name"`
	Kind      string            `json:"kind"`
	Synthetic bool              `json:"synthetic"`
	Contents  []contentDocument `json:"contents"`
}

type contentDocument struct {
	Quantity int             `json:"quantity"`
	Cigar    json.RawMessage `json:"cigar"`
}

// NewProductDocument renders a product with the documents of its cigars, in the
// order of its contents.
func NewProductDocument(p *Product, cigars []Document) (Document, error) {
	d := productDocument{ID: p.ID, GTIN: p.GTIN, Name: p.Name, Kind: p.Kind, Synthetic: p.Synthetic, Contents: make([]contentDocument, len(p.Contents))}
	for i, c := range p.Contents {
		d.Contents[i] = contentDocument{Quantity: c.Quantity, Cigar: json.RawMessage(cigars[i])}
	}
	raw, err := json.Marshal(d)
	return Document(raw), err
}

// MarshalGQL writes the document as it is.
func (d Document) MarshalGQL(w io.Writer) { w.Write(d) }

// UnmarshalGQL refuses input: documents are output only.
func (d *Document) UnmarshalGQL(any) error { return errors.New("CigarDocument is output only") }
