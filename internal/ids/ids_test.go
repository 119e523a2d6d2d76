package ids_test

import (
	"testing"

	"github.com/vitolahq/vitola/internal/ids"
)

func TestNewIsPrefixedAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ids.New(ids.Cigar)
		if !ids.Valid(id, ids.Cigar) {
			t.Fatalf("New(cig) = %q, not a valid cigar ID", id)
		}
		if seen[id] {
			t.Fatalf("duplicate ID %q", id)
		}
		seen[id] = true
	}
}

func TestDeriveIsStable(t *testing.T) {
	a, b := ids.Derive(ids.Brand, "Padrón"), ids.Derive(ids.Brand, "Padrón")
	if a != b {
		t.Fatalf("Derive not stable: %q vs %q", a, b)
	}
	if a == ids.Derive(ids.Brand, "Padron") || a == ids.Derive(ids.Cigar, "Padrón") {
		t.Fatal("Derive collides across keys or prefixes")
	}
}

func TestPrefix(t *testing.T) {
	tests := []struct {
		id     string
		prefix string
		ok     bool
	}{
		{ids.Derive(ids.Venue, "x"), ids.Venue, true},
		{"ven_", "", false},
		{"ven_0123456789abcdef", "ven", true},
		{"ven_0123456789abcdeu", "", false}, // u is not in the alphabet
		{"ven_0123456789ABCDEF", "", false},
		{"nounderscore", "", false},
		{"_0123456789abcdef", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		p, ok := ids.Prefix(tt.id)
		if p != tt.prefix || ok != tt.ok {
			t.Errorf("Prefix(%q) = %q, %v; want %q, %v", tt.id, p, ok, tt.prefix, tt.ok)
		}
	}
}

func TestRetype(t *testing.T) {
	ses := ids.Derive(ids.SmokeSession, "x")
	pse, ok := ids.Retype(ses, ids.PublicSession)
	if !ok || !ids.Valid(pse, ids.PublicSession) || pse == ses {
		t.Fatalf("Retype(%q, pse) = %q, %v", ses, pse, ok)
	}
	if back, ok := ids.Retype(pse, ids.SmokeSession); !ok || back != ses {
		t.Fatalf("Retype back = %q, %v; want %q", back, ok, ses)
	}
	for _, bad := range []string{"", "ses_", "nounderscore", "ses_0123456789ABCDEF"} {
		if got, ok := ids.Retype(bad, ids.PublicSession); ok || got != "" {
			t.Errorf("Retype(%q) = %q, %v; want refused", bad, got, ok)
		}
	}
}
