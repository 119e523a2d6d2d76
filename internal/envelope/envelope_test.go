package envelope_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/envelope"
)

func key(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

func TestSealOpenRewrap(t *testing.T) {
	old, err := envelope.ParseKeyring("k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"secretKey":"sk_test_123"}`)
	s, err := old.Seal(secret, "mer_1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Ciphertext+s.WrappedKey, "sk_test") || s.KEKID != "k1" {
		t.Fatalf("sealed record shows its secret or the wrong KEK: %+v", s)
	}
	if got, err := old.Open(s, "mer_1"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := old.Open(s, "mer_2"); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("a record copied to another ID opened: %v", err)
	}
	tampered := s
	ct, _ := base64.StdEncoding.DecodeString(s.Ciphertext)
	ct[len(ct)-1] ^= 1
	tampered.Ciphertext = base64.StdEncoding.EncodeToString(ct)
	if _, err := old.Open(tampered, "mer_1"); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("an altered record opened: %v", err)
	}

	// Rotation: k2 becomes current, k1 still opens old records; rewrapping
	// moves a record to k2 without changing its ciphertext.
	rotated, err := envelope.ParseKeyring("k2:" + key(2) + ", k1:" + key(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(s, "mer_1"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("old record under the rotated keyring: %q %v", got, err)
	}
	re, err := rotated.Rewrap(s, "mer_1")
	if err != nil || re.KEKID != "k2" || re.Ciphertext != s.Ciphertext {
		t.Fatalf("rewrap: %+v %v", re, err)
	}
	newOnly, _ := envelope.ParseKeyring("k2:" + key(2))
	if got, err := newOnly.Open(re, "mer_1"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("rewrapped record without k1: %q %v", got, err)
	}
	if _, err := newOnly.Open(s, "mer_1"); !errors.Is(err, envelope.ErrUnknownKEK) {
		t.Fatalf("a record of a retired KEK: %v", err)
	}
	// A wrapped key relabelled with another KEK's ID does not open.
	relabelled := re
	relabelled.KEKID = "k1"
	if _, err := rotated.Open(relabelled, "mer_1"); !errors.Is(err, envelope.ErrOpen) {
		t.Fatalf("relabelled record: %v", err)
	}
}

func TestParseKeyringRefusals(t *testing.T) {
	for _, spec := range []string{"", "k1", "k1:short", "bad id:" + key(1), "k1:" + key(1) + ",k1:" + key(2), "k1:!!!"} {
		if _, err := envelope.ParseKeyring(spec); err == nil {
			t.Errorf("ParseKeyring(%q) accepted", spec)
		} else if strings.Contains(err.Error(), key(1)) {
			t.Errorf("error repeats the key: %v", err)
		}
	}
}
