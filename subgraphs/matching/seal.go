package matching

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Sealer signs the fingerprints the platform makes, so that recognize accepts
// only a fingerprint passed back whole and unmodified (the spec's rule): a
// client cannot forge one, nor edit or truncate one, to probe the index.
type Sealer struct{ key []byte }

// sealPrefix names the seal's scheme, so that a future scheme can coexist.
const sealPrefix = "hs256."

// NewSealer derives the sealing key from the internal key, so that every
// replica seals and verifies alike, and a seal is no internal token.
func NewSealer(internalKey []byte) *Sealer {
	mac := hmac.New(sha256.New, internalKey)
	mac.Write([]byte("vitola fingerprint seal"))
	return &Sealer{key: mac.Sum(nil)}
}

// Seal returns the seal of a fingerprint's canonical JSON (the fingerprint
// without its seal).
func (s *Sealer) Seal(canonical []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write(canonical)
	return sealPrefix + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports, in constant time, whether seal is the seal of canonical.
func (s *Sealer) Verify(canonical []byte, seal string) bool {
	got, ok := strings.CutPrefix(seal, sealPrefix)
	if !ok {
		return false
	}
	sum, err := base64.RawURLEncoding.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write(canonical)
	return hmac.Equal(sum, mac.Sum(nil))
}
