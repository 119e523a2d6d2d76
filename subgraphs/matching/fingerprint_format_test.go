package matching_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

func TestFingerprintSealSurvivesFormattingNotChanges(t *testing.T) {
	s := matching.NewSealer([]byte("internal-key-0123456789abcdef-0123"))
	view := &fingerprint.Fingerprint{Version: fingerprint.Version, Vector: []float32{0.6, 0.8}, Hashes: fingerprint.Hashes{DHash: "00ff00ff00ff00ff"}}
	raw, err := s.SealFingerprint(&matching.Fingerprint{Views: []*fingerprint.Fingerprint{view}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFingerprint(raw); err != nil {
		t.Fatalf("its own fingerprint: %v", err)
	}
	// A client that re-indents the object passes the seal.
	var pretty bytes.Buffer
	json.Indent(&pretty, raw, "", "  ")
	if _, err := s.OpenFingerprint(pretty.Bytes()); err != nil {
		t.Fatalf("re-indented: %v", err)
	}
	// A fingerprint this platform sealed in an older band format is stale,
	// not forged: it says to fingerprint again.
	old := &fingerprint.Fingerprint{Version: "vitola-band-1", Vector: []float32{0.6, 0.8}}
	staleRaw, err := s.SealFingerprint(&matching.Fingerprint{Views: []*fingerprint.Fingerprint{view, old}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenFingerprint(staleRaw); !errors.Is(err, matching.ErrStaleFingerprint) {
		t.Errorf("older band format: %v, want %v", err, matching.ErrStaleFingerprint)
	}
	for name, c := range map[string]struct {
		raw  string
		want error
	}{
		"modified hash":      {strings.Replace(string(raw), "00ff00ff00ff00ff", "00ff00ff00ff00fe", 1), matching.ErrBadSeal},
		"modified float":     {strings.Replace(string(raw), "0.8", "0.81", 1), matching.ErrBadSeal},
		"dropped view field": {strings.Replace(string(raw), `,"vector":[0.6,0.8]`, "", 1), matching.ErrBadSeal},
		"no seal":            {strings.Replace(string(raw), `"seal":"hs256.`, `"seal":"x`, 1), matching.ErrBadSeal},
		"truncated":          {string(raw[:len(raw)-10]), matching.ErrMalformedFingerprint},
		"extra field":        {strings.Replace(string(raw), `{"object"`, `{"extra":1,"object"`, 1), matching.ErrMalformedFingerprint},
		"no views":           {`{"object":"band_fingerprint","version":"vitola-fingerprint-1","views":[],"seal":"hs256.x"}`, matching.ErrMalformedFingerprint},
		"other object":       {strings.Replace(string(raw), "band_fingerprint", "fingerprint", 1), matching.ErrMalformedFingerprint},
		"not json":           {"hello", matching.ErrMalformedFingerprint},
	} {
		if c.raw == string(raw) {
			t.Fatalf("%s: the case leaves the fingerprint unchanged", name)
		}
		if _, err := s.OpenFingerprint([]byte(c.raw)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
