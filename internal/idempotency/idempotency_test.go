package idempotency_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/idempotency"
)

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"9f1c2e4a-6b1d-4c8e-9a7f-0e2d3c4b5a69": true,
		"order:2026.11.23_a-1":                 true,
		strings.Repeat("k", 200):               true,
		strings.Repeat("k", 201):               false,
		"":                                     false,
		"with space":                           false,
		"slash/no":                             false,
		"naïve":                                false,
	} {
		if got := idempotency.ValidKey(key); got != want {
			t.Errorf("ValidKey(%.20q) = %v, want %v", key, got, want)
		}
	}
	a := idempotency.RequestHash("POST", "/v1/x", []byte(`{"a":1}`))
	if a == idempotency.RequestHash("POST", "/v1/y", []byte(`{"a":1}`)) || a == idempotency.RequestHash("POST", "/v1/x", []byte(`{"a":2}`)) || a != idempotency.RequestHash("POST", "/v1/x", []byte(`{"a":1}`)) {
		t.Error("RequestHash must tell paths and bodies apart and be stable")
	}
}

func TestKeyFromHeader(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		key    string
		err    error
	}{
		{"one", []string{"k-1"}, "k-1", nil},
		{"none", nil, "", idempotency.ErrInvalid},
		{"empty", []string{""}, "", idempotency.ErrInvalid},
		{"invalid", []string{"a b"}, "", idempotency.ErrInvalid},
		{"two", []string{"k-1", "k-2"}, "", idempotency.ErrRepeated},
		{"the same twice", []string{"k-1", "k-1"}, "", idempotency.ErrRepeated},
		{"a list in one", []string{"k-1, k-2"}, "", idempotency.ErrInvalid},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.values {
			h.Add("Idempotency-Key", v)
		}
		key, err := idempotency.KeyFromHeader(h)
		if key != tt.key || !errors.Is(err, tt.err) {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, key, err, tt.key, tt.err)
		}
	}
}
