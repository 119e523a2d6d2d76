package matching_test

import (
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
)

func TestSeal(t *testing.T) {
	s := matching.NewSealer([]byte("internal-key-0123456789abcdef-0123"))
	fp := []byte(`{"version":"vitola-band-2","hashes":{"dhash":"8f3c"}}`)
	seal := s.Seal(fp)
	if !s.Verify(fp, seal) || s.Seal(fp) != seal {
		t.Fatal("a fingerprint's own seal must verify, and sealing must be deterministic")
	}
	other := matching.NewSealer([]byte("another-deployment-key-0123456789ab"))
	for name, ok := range map[string]bool{
		"modified":          s.Verify([]byte(`{"version":"vitola-band-2","hashes":{"dhash":"8f3d"}}`), seal),
		"truncated":         s.Verify(fp[:len(fp)-2], seal),
		"seal truncated":    s.Verify(fp, seal[:len(seal)-1]),
		"another key":       other.Verify(fp, seal),
		"empty seal":        s.Verify(fp, ""),
		"no scheme":         s.Verify(fp, seal[len("hs256."):]),
		"garbage":           s.Verify(fp, "hs256.!!!"),
		"another's seal ok": !other.Verify(fp, other.Seal(fp)),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}
