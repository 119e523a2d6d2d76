// Package matching is the matching subgraph's domain: band evidence (reference
// fingerprints of catalog cigars) and recognition against it. The subgraph is
// internal: only the shim calls it.
package matching

import (
	"context"
	"encoding/json"
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
