package payments

import (
	"encoding/json"
	"errors"
	"io"
)

// Document is a resource's JSON as the payments API shows it, rendered by
// the subgraph in one piece: the shim passes it on without a field-by-field
// GraphQL selection (what a payment session's create and status cost most).
type Document json.RawMessage

// MarshalGQL writes the document as it is.
func (d Document) MarshalGQL(w io.Writer) { w.Write(d) }

// UnmarshalGQL refuses input: documents are output only.
func (d *Document) UnmarshalGQL(any) error { return errors.New("documents are output only") }
