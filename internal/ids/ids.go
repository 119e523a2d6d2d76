// Package ids makes the platform's public IDs: opaque strings with a type prefix
// ("cig_…", "brd_…") that work the same in REST and in GraphQL's node(id:).
package ids

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
)

// Prefixes of every public ID type. node(id:) dispatches on them.
const (
	Brand   = "brd"
	Cigar   = "cig"
	Product = "prd"
	Venue   = "ven"
	Event   = "evt"
	User    = "usr"
	Key     = "key"
	// Connected-user data, owned by the users subgraph.
	Collection   = "col"
	Humidor      = "hum"
	SmokeSession = "ses"
	CheckIn      = "chk"
	// PublicSession is a public smoke session as the business feeds show it:
	// its own Node, so that a client's cache never mixes it with the owner's
	// SmokeSession. Its body is the session's (see Retype).
	PublicSession = "pse"
	// Credits, owned by the payments subgraph.
	BillingAccount    = "acc"
	CreditReservation = "rsv"
	LedgerEntry       = "lde"
	LedgerTransaction = "ltx"
	LedgerPosting     = "lpo"
	ServiceClient     = "pcl"
	Offer             = "off"
	MerchantAccount   = "mer"
	PaymentSession    = "pss"
	Purchase          = "pur"
	PaymentMethod     = "pmt"
	// Band evidence, owned by the matching subgraph.
	Evidence = "evd"
)

// bodyLen is the number of base32 characters after the prefix: 80 bits, plenty for
// uniqueness and short enough to read.
const bodyLen = 16

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // Crockford base32, lower case

// New returns a fresh random ID with the given prefix.
func New(prefix string) string {
	var b [bodyLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("ids: no randomness: " + err.Error()) // crypto/rand never fails on Linux
	}
	return encode(prefix, b[:])
}

// Derive returns the ID a natural key always maps to. Seeds and imports use it so
// that re-running them upserts instead of duplicating, and so that subgraphs agree
// on IDs of data they seed independently (a venue's event naming a brand).
func Derive(prefix, naturalKey string) string {
	sum := sha256.Sum256([]byte(prefix + "\x00" + naturalKey))
	return encode(prefix, sum[:bodyLen])
}

func encode(prefix string, b []byte) string {
	out := make([]byte, 0, len(prefix)+1+bodyLen)
	out = append(out, prefix...)
	out = append(out, '_')
	for _, c := range b[:bodyLen] {
		out = append(out, alphabet[c&31])
	}
	return string(out)
}

// Prefix returns the type prefix of id, and false when id is not shaped like a
// public ID at all.
func Prefix(id string) (string, bool) {
	p, body, ok := strings.Cut(id, "_")
	if !ok || len(body) != bodyLen || p == "" {
		return "", false
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(alphabet, body[i]) < 0 {
			return "", false
		}
	}
	return p, true
}

// Retype returns the ID with the same body under another type prefix: a second
// view of one record (a PublicSession of a SmokeSession) gets an ID of its own
// that still leads back to the record. It is false when id is not a public ID.
func Retype(id, prefix string) (string, bool) {
	if _, ok := Prefix(id); !ok {
		return "", false
	}
	_, body, _ := strings.Cut(id, "_")
	return prefix + "_" + body, true
}

// Valid reports whether id is a well-formed ID of the given type.
func Valid(id, prefix string) bool {
	p, ok := Prefix(id)
	return ok && p == prefix
}
