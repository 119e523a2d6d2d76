package weborigin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/weborigin"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"https://Shop.Example":     "https://shop.example",
		"https://shop.example/":    "https://shop.example",
		"https://shop.example:444": "https://shop.example:444",
		"http://localhost:3000":    "http://localhost:3000",
		"http://127.0.0.1:8080":    "http://127.0.0.1:8080",
		" https://shop.example ":   "https://shop.example",
		"http://shop.example":      "",
		"https://shop.example/pay": "",
		"https://u:p@shop.example": "",
		"https://shop.example?x=1": "",
		"shop.example":             "",
		"":                         "",
	} {
		got, err := weborigin.Normalize(in)
		if got != want || (want == "") != errors.Is(err, weborigin.ErrBad) {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A refused origin is named in the error cut short: the payments API and the
// key commands repeat the error to whoever sent it.
func TestNormalizeErrorCutsTheOrigin(t *testing.T) {
	_, err := weborigin.Normalize("https://shop.example/" + strings.Repeat("x", 10_000))
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "x…") {
		t.Errorf("error: %.300q", err)
	}
}
