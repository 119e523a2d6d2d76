package idempotency_test

import (
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
