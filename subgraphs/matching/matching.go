// Package matching is the matching subgraph's domain: band evidence (reference
// fingerprints of catalog cigars) and recognition against it. The subgraph is
// internal: only the shim calls it.
package matching

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Evidence is one reference fingerprint of a catalog cigar's band.
type Evidence struct {
	ID string
	// CigarID is the catalog cigar's public ID (the catalog owns the cigar).
	CigarID string
	// Source says where it came from: "demo", or the image file's name.
	Source string
	// Fingerprint is the band's fingerprint JSON (unsealed).
	Fingerprint json.RawMessage
	CreatedAt   time.Time
}

// EvidenceStore keeps evidence. Its version moves with every write, so that
// every replica's recognition index follows it.
type EvidenceStore interface {
	// AddEvidence stores evidence in one transaction.
	AddEvidence(ctx context.Context, ev []*Evidence) error
	AllEvidence(ctx context.Context) ([]*Evidence, error)
	EvidenceVersion(ctx context.Context) (int64, error)
	CountEvidence(ctx context.Context) (int, error)
	Ping(ctx context.Context) error
}

// Refusal is a request matching will not do. Code is stable: in upper case
// it is the API's extensions.code, in lower case the REST error code (as
// the image intake's codes are); Message says what was wrong and how to fix it.
type Refusal struct {
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Refuse returns a Refusal.
func Refuse(code, format string, args ...any) error {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}
