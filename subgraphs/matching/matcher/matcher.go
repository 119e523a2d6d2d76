// Package matcher is the matching subgraph's work: it fetches photos safely,
// describes the band in them as a sealed fingerprint, and recognizes
// fingerprints against the evidence snapshot that follows the store.
package matcher

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/follow"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
)

// Matcher holds the subgraph's dependencies.
type Matcher struct {
	Fetch  *imagefetch.Fetcher
	Sealer *matching.Sealer
	// OCR reads band text; nil when no OCR is installed (fingerprints then say
	// "unavailable").
	OCR      fingerprint.OCR
	Evidence *follow.Value[recognize.Snapshot]
	// Catalog resolves text and describes cigars for identify.
	Catalog Catalog
	// Model is the optional vision-model fallback (nil: off).
	Model Model
	// Log reports what fails quietly (a vendor that did not answer).
	Log zerolog.Logger
}

// ErrNoBand: a photo held nothing that could be described as a band.
var ErrNoBand = errors.New("no cigar band could be described in the photo: send a sharper, closer photo of the band")

// Fingerprint fetches the photos (1 to 8) and returns the sealed fingerprint's
// JSON: one view per photo, in order. Views are computed concurrently; each is
// deterministic, so the fingerprint is too.
func (m *Matcher) Fingerprint(ctx context.Context, urls []string) ([]byte, error) {
	views, err := m.views(ctx, urls, true)
	if err != nil {
		return nil, err
	}
	return m.Sealer.SealFingerprint(&matching.Fingerprint{Views: views})
}

// Recognize checks a passed-back fingerprint's seal and ranks the cigars whose
// evidence matches it.
func (m *Matcher) Recognize(raw []byte, limit int) ([]recognize.Candidate, error) {
	fp, err := m.Sealer.OpenFingerprint(raw)
	if err != nil {
		return nil, err
	}
	return m.Evidence.Get().Recognize(fp.Views, limit)
}
