package matching

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// The API's fingerprint: one band seen in 1 to 8 photos. It is what the
// fingerprint route answers, and what recognize takes back whole.
const (
	FingerprintObject  = "band_fingerprint"
	FingerprintVersion = "vitola-fingerprint-1"
	// MaxViews bounds the photos of one fingerprint (the API's image limit).
	MaxViews = 8
	// MaxFingerprintBytes bounds a fingerprint passed back (a view is up to
	// about 105 KB, 100 of them its keypoints; eight about 850 KB): decoding
	// never holds more than a few times this.
	MaxFingerprintBytes = 1 << 20
)

// Fingerprint is a sealed description of one band: a view per photo, in the
// order the photos were given.
type Fingerprint struct {
	Object  string                     `json:"object"`
	Version string                     `json:"version"`
	Views   []*fingerprint.Fingerprint `json:"views"`
	// Seal covers everything else (see Sealer).
	Seal string `json:"seal"`
}

// Errors of OpenFingerprint.
var (
	ErrMalformedFingerprint = errors.New("fingerprint is not a band_fingerprint object as the fingerprint route returns it")
	ErrBadSeal              = errors.New("fingerprint was modified or truncated (its seal does not match): pass back the whole object the fingerprint route returned")
	// ErrStaleFingerprint: sealed by this platform, but its views are of
	// another band format, which the evidence cannot be compared with.
	ErrStaleFingerprint = errors.New("fingerprint was made in a band format this release no longer compares (" + fingerprint.Version + " and " + fingerprint.PreviousVersion + " are): fingerprint the images again")
)

// canonical is the JSON the seal covers: the fingerprint without its seal, as
// encoding/json writes it (deterministic for structs), whatever formatting the
// client used.
func canonical(f *Fingerprint) ([]byte, error) {
	c := *f
	c.Seal = ""
	return json.Marshal(&c)
}

// SealFingerprint seals f and returns its JSON.
func (s *Sealer) SealFingerprint(f *Fingerprint) ([]byte, error) {
	f.Object, f.Version = FingerprintObject, FingerprintVersion
	body, err := canonical(f)
	if err != nil {
		return nil, err
	}
	f.Seal = s.Seal(body)
	return json.Marshal(f)
}

// OpenFingerprint decodes a fingerprint a client passed back and checks its
// seal: unknown or missing fields, another version, or any change fails; a
// sealed fingerprint whose views are of another band format is stale.
func (s *Sealer) OpenFingerprint(raw []byte) (*Fingerprint, error) {
	if len(raw) > MaxFingerprintBytes {
		return nil, fmt.Errorf("%w: it is %d bytes, over %d", ErrMalformedFingerprint, len(raw), MaxFingerprintBytes)
	}
	var f Fingerprint
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || dec.More() {
		return nil, fmt.Errorf("%w: %v", ErrMalformedFingerprint, err)
	}
	if f.Object != FingerprintObject || f.Version != FingerprintVersion || len(f.Views) == 0 || len(f.Views) > MaxViews {
		return nil, ErrMalformedFingerprint
	}
	for _, v := range f.Views {
		if v == nil {
			return nil, ErrMalformedFingerprint
		}
	}
	body, err := canonical(&f)
	if err != nil {
		return nil, err
	}
	if !s.Verify(body, f.Seal) {
		return nil, ErrBadSeal
	}
	for _, v := range f.Views {
		if !fingerprint.Readable(v.Version) {
			return nil, ErrStaleFingerprint
		}
	}
	return &f, nil
}
