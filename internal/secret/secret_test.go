package secret_test

import (
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/secret"
)

func TestHash(t *testing.T) {
	if got := secret.Hash("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Hash(abc) = %s", got)
	}
}

func TestBase62IsUniformAndUnique(t *testing.T) {
	counts := map[rune]int{}
	seen := map[string]bool{}
	for range 2000 {
		s := secret.Base62(43)
		if len(s) != 43 || seen[s] {
			t.Fatalf("Base62(43) = %q (repeated: %v)", s, seen[s])
		}
		seen[s] = true
		for _, r := range s {
			if !strings.ContainsRune("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", r) {
				t.Fatalf("%q is not base62", r)
			}
			counts[r]++
		}
	}
	// 86,000 characters: about 1387 of each; a biased generator (b%62 without
	// rejection) would give the first 8 characters about 1.25 times as many.
	for r, n := range counts {
		if n < 1150 || n > 1650 {
			t.Errorf("%q appears %d times, want about 1387", r, n)
		}
	}
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters, want 62", len(counts))
	}
}
