package search_test

import (
	"encoding/base64"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

// FuzzCursor: the search cursor decoder never panics; it round-trips its own
// cursors; it never accepts a cursor it did not sign for the query, nor a
// signed cursor with any byte changed, cut or extended, nor one for another
// query; and whatever it accepts means exactly a position it signed.
func FuzzCursor(f *testing.F) {
	valid := search.NewCursors([]byte("secret")).Encode(search.QueryKey("padron 1964", ""), search.Position{Score: 312, ID: "cig_4183aqya9w5g6e5q"})
	f.Add("padron 1964", "", int64(312), "cig_4183aqya9w5g6e5q", valid, uint(10), byte(1), "padron 1926")
	f.Add("Padrón  1964", "brd_x", int64(-7), "cig_x", "!!!", uint(0), byte(0xff), "padron 1964")
	f.Add("monte cristo", "", int64(1<<62), "", "", uint(69), byte(4), "montecristo")
	f.Add("x", "brd_y", int64(0), "cig_\x00\xff", valid[:40], uint(3), byte(' '), "x")
	c := search.NewCursors([]byte("secret"))
	f.Fuzz(func(t *testing.T, text, brand string, score int64, id, cursor string, at uint, flip byte, other string) {
		qk := search.QueryKey(text, brand)
		// Anything: no panic, and an accepted cursor carries a payload this
		// key signed for this query (the same bytes its own cursor has).
		if pos, err := c.Decode(qk, cursor); err == nil {
			if !sameBytes(t, cursor, c.Encode(qk, pos)) {
				t.Fatalf("accepted %q, which is not the cursor of %+v", cursor, pos)
			}
		}
		// Round trip (IDs are short: the routes refuse path IDs over 100 bytes).
		if len(id) > 100 {
			id = id[:100]
		}
		want := search.Position{Score: int(score), ID: id}
		own := c.Encode(qk, want)
		if got, err := c.Decode(qk, own); err != nil || got != want {
			t.Fatalf("own cursor %q of %+v: %+v, %v", own, want, got, err)
		}
		// Tampered: one byte changed, cut short, or extended.
		i := int(at % uint(len(own)))
		if flip != 0 {
			b := []byte(own)
			b[i] ^= flip
			tampered := string(b)
			if got, err := c.Decode(qk, tampered); err == nil && (got != want || !sameBytes(t, tampered, own)) {
				t.Fatalf("accepted %q, %q with byte %d changed: %+v", tampered, own, i, got)
			}
		}
		for _, bad := range []string{own[:i], own + own[i:i+1], own + "AA"} {
			if got, err := c.Decode(qk, bad); err == nil && !sameBytes(t, bad, own) {
				t.Fatalf("accepted %q, %q cut or extended: %+v", bad, own, got)
			}
		}
		// Another query (unless it folds to the same words and brand).
		if oqk := search.QueryKey(other, brand); oqk != qk {
			if got, err := c.Decode(oqk, own); err == nil {
				t.Fatalf("the cursor of %q was accepted for %q: %+v", text, other, got)
			}
		}
		// Another key.
		if _, err := search.NewCursors([]byte("other secret")).Decode(qk, own); err == nil {
			t.Fatal("a cursor signed with another secret was accepted")
		}
	})
}

// sameBytes reports whether two cursors carry the same bytes. Base64 without
// padding leaves the last character's low bits unused, and the decoder does
// not insist they are zero, so a cursor has a few spellings; they all mean
// the same position.
func sameBytes(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := base64.RawURLEncoding.DecodeString(a)
	y, err2 := base64.RawURLEncoding.DecodeString(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
