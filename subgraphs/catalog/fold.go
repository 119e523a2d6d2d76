package catalog

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold lower-cases s and strips accents ("Padrón" → "padron"), so that matching
// ignores both.
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
