package users

import (
	"errors"
	"io"
)

// RawJSON is a JSON value the users subgraph renders itself (the JWKS).
type RawJSON []byte

// MarshalGQL writes the value as it is.
func (j RawJSON) MarshalGQL(w io.Writer) { w.Write(j) }

// UnmarshalGQL refuses input: the value is output only.
func (j *RawJSON) UnmarshalGQL(any) error { return errors.New("output only") }
