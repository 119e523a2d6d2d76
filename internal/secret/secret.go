// Package secret makes and hashes the platform's high-entropy secrets:
// developer keys, OAuth client secrets, codes and refresh tokens.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Hash is the hex SHA-256 of a secret, as stored. Secrets have 256 bits of
// entropy, so a plain SHA-256 is the right hash: a slow password hash would
// only slow every request down.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Base62 returns n random base62 characters, uniformly distributed (about 5.95
// bits each: 43 make 256 bits).
func Base62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		rand.Read(buf) // never fails (crypto/rand panics rather)
		for _, b := range buf {
			// Bytes from 248 up are rejected: 248 = 4 × 62 keeps every
			// character equally likely.
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}
