package apierr_test

import (
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/apierr"
)

func TestClipAndQuote(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, tc := range []struct{ in, clip, quote string }{
		{"cig_1", "cig_1", `"cig_1"`},
		{long[:apierr.MaxEcho], long[:apierr.MaxEcho], `"` + long[:apierr.MaxEcho] + `"`},
		{long, long[:apierr.MaxEcho] + "…", `"` + long[:apierr.MaxEcho] + `…"`},
		{strings.Repeat("é", 100), strings.Repeat("é", apierr.MaxEcho) + "…", `"` + strings.Repeat("é", apierr.MaxEcho) + `…"`},
		{"a\"b\n", "a\"b\n", `"a\"b\n"`},
		{"\xff" + long, "" + long[:apierr.MaxEcho-1] + "…", `"` + long[:apierr.MaxEcho-1] + `…"`},
	} {
		if got := apierr.Clip(tc.in); got != tc.clip {
			t.Errorf("Clip(%.20q…) = %.80q, want %.80q", tc.in, got, tc.clip)
		}
		if got := apierr.Quote(tc.in); got != tc.quote {
			t.Errorf("Quote(%.20q…) = %.80q, want %.80q", tc.in, got, tc.quote)
		}
	}
}

func TestClipQuoted(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, tc := range []struct{ in, want string }{
		{`Cannot query field "name" on type "Query".`, `Cannot query field "name" on type "Query".`},
		{`Cannot query field "` + long + `" on type "Query".`, `Cannot query field "` + long[:apierr.MaxEcho] + `…" on type "Query".`},
		{`Unknown argument "` + long[:apierr.MaxEcho-1] + `\"y" on field "cigar".`, `Unknown argument "` + long[:apierr.MaxEcho-1] + `…" on field "cigar".`},
	} {
		if got := apierr.ClipQuoted(tc.in); got != tc.want {
			t.Errorf("ClipQuoted(%.40q…) = %.120q, want %.120q", tc.in, got, tc.want)
		}
	}
}
