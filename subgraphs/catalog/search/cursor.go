package search

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"sort"
	"strings"
)

// A cursor is a keyset position (score, cigar ID) in one query's ranking, signed
// and bound to that query: a tampered cursor, or one from another query, is
// refused rather than silently paging through the wrong list.

// ErrBadCursor is returned for a cursor that is not one of this query's.
var ErrBadCursor = errors.New("cursor is not a cursor of this search: pass endCursor unchanged, with the same query and brand")

// Position is where a page ends: the last hit's score and ID.
type Position struct {
	Score int
	ID    string
}

// Cursors signs and checks cursors with a secret key.
type Cursors struct{ key []byte }

// NewCursors returns a signer keyed by secret.
func NewCursors(secret []byte) *Cursors {
	k := sha256.Sum256(append([]byte("vitola search cursor\x00"), secret...))
	return &Cursors{key: k[:]}
}

// QueryKey identifies a query for cursor binding: its folded words and filter.
func QueryKey(text, brandID string) string {
	return strings.Join(Words(text), " ") + "\x00" + brandID
}

func (c *Cursors) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// Encode makes the cursor of position p in the query queryKey.
func (c *Cursors) Encode(queryKey string, p Position) string {
	qh := sha256.Sum256([]byte(queryKey))
	payload := make([]byte, 0, 8+8+len(p.ID))
	payload = append(payload, qh[:8]...)
	payload = binary.BigEndian.AppendUint64(payload, uint64(int64(p.Score)))
	payload = append(payload, p.ID...)
	return base64.RawURLEncoding.EncodeToString(append(payload, c.mac(payload)...))
}

// Decode checks a cursor against the query and returns its position.
func (c *Cursors) Decode(queryKey, cursor string) (Position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 8+8+16 || len(cursor) > 200 {
		return Position{}, ErrBadCursor
	}
	payload, sig := raw[:len(raw)-16], raw[len(raw)-16:]
	if !hmac.Equal(sig, c.mac(payload)) {
		return Position{}, ErrBadCursor
	}
	qh := sha256.Sum256([]byte(queryKey))
	if !hmac.Equal(payload[:8], qh[:8]) {
		return Position{}, ErrBadCursor
	}
	return Position{Score: int(int64(binary.BigEndian.Uint64(payload[8:16]))), ID: string(payload[16:])}, nil
}

// After returns the hits that rank after p (hits sorted best first).
func After(hits []Hit, p Position) []Hit {
	i := sort.Search(len(hits), func(i int) bool { return ranksAfter(hits[i], p) })
	return hits[i:]
}
