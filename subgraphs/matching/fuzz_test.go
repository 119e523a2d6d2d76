package matching_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// FuzzFingerprintDecode feeds recognize's decoder (OpenFingerprint) anything:
// it never panics, refuses anything the platform did not seal (what it
// accepts is exactly what the seal covers: sealing it again gives the same
// seal), refuses input over MaxFingerprintBytes, and names one of its three
// errors for every refusal. Seeds: a sealed fingerprint of the golden example
// view, compact and indented, and damaged copies.
//
//	go test -run '^$' -fuzz FuzzFingerprintDecode -fuzztime 60s ./subgraphs/matching/
func FuzzFingerprintDecode(f *testing.F) {
	s := matching.NewSealer([]byte("internal-key-0123456789abcdef-0123"))
	example, err := os.ReadFile("fingerprint/testdata/example.json")
	if err != nil {
		f.Fatal(err)
	}
	var view fingerprint.Fingerprint
	if err := json.Unmarshal(example, &view); err != nil {
		f.Fatal(err)
	}
	sealed, err := s.SealFingerprint(&matching.Fingerprint{Views: []*fingerprint.Fingerprint{&view, &view}})
	if err != nil {
		f.Fatal(err)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, sealed, "", "  ")
	f.Add(sealed)
	f.Add(pretty.Bytes())
	f.Add(sealed[:len(sealed)/2])
	f.Add(bytes.Replace(sealed, []byte(`"hs256.`), []byte(`"hs256.A`), 1))
	f.Add([]byte(`{"object":"band_fingerprint","version":"vitola-fingerprint-1","views":[],"seal":""}`))
	f.Add([]byte(`{"object":"band_fingerprint","version":"vitola-fingerprint-1","views":[null],"seal":"hs256."}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Add([]byte(`{"views":[{"vector":[1e308,-1e308,NaN]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fp, err := s.OpenFingerprint(raw)
		if err != nil {
			if fp != nil {
				t.Fatal("a refusal returned a fingerprint")
			}
			if !errors.Is(err, matching.ErrMalformedFingerprint) && !errors.Is(err, matching.ErrBadSeal) && !errors.Is(err, matching.ErrStaleFingerprint) {
				t.Fatalf("refused with an unnamed error: %v", err)
			}
			return
		}
		if len(raw) > matching.MaxFingerprintBytes {
			t.Fatalf("accepted %d bytes, over the limit", len(raw))
		}
		seal := fp.Seal
		again, err := s.SealFingerprint(fp)
		if err != nil {
			t.Fatal(err)
		}
		if fp.Seal != seal || !strings.Contains(string(again), seal) {
			t.Fatalf("accepted a fingerprint whose content is not what its seal covers")
		}
	})
}

// TestOpenFingerprintRefusesHugeInput: a sealed fingerprint padded past
// MaxFingerprintBytes (with whitespace, which the seal does not cover) is
// refused before it is parsed: a caller other than the shim (which caps the
// body) cannot make recognize parse megabytes.
func TestOpenFingerprintRefusesHugeInput(t *testing.T) {
	s := matching.NewSealer([]byte("internal-key-0123456789abcdef-0123"))
	view := &fingerprint.Fingerprint{Version: fingerprint.Version, Vector: []float32{0.6, 0.8}}
	raw, err := s.SealFingerprint(&matching.Fingerprint{Views: []*fingerprint.Fingerprint{view}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFingerprint(raw); err != nil {
		t.Fatal(err)
	}
	padded := append(bytes.Repeat([]byte(" "), matching.MaxFingerprintBytes), raw...)
	if _, err := s.OpenFingerprint(padded); !errors.Is(err, matching.ErrMalformedFingerprint) {
		t.Errorf("%d bytes: %v, want %v", len(padded), err, matching.ErrMalformedFingerprint)
	}
}
