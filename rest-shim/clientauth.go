package restshim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"hash"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// clientAuthTTL is how long the shim trusts a service client's ID and secret
// after the payments subgraph verified them, instead of asking again on every
// request. It only spares the check of the secret: every payments operation
// still checks, in the subgraph, that its client is active and allowed (with
// a row at most a second old), so a revoked client is refused as promptly
// as without this cache. A secret past its rotation grace is refused within
// this time too.
const clientAuthTTL = time.Second

// clientAuthSize bounds the verifications kept; only verified credentials
// are kept, so guessing does not fill it.
const clientAuthSize = 4096

// clientAuths remembers verified service client credentials, each under a
// keyed hash of the ID and the secret: the plain secret is never kept, and
// without the process's random key nobody can tell which secret a digest
// stands for, or aim a guess at one (the lookup is a map's, not
// constant-time).
type clientAuths struct {
	// macs are HMACs keyed with the process's random key, reset between
	// uses: keying one anew hashed the key twice on every request.
	macs  sync.Pool
	cache *lru.Cache[[sha256.Size]byte, time.Time]
	now   func() time.Time
}

func newClientAuths() *clientAuths {
	key := make([]byte, 32)
	rand.Read(key)
	c, _ := lru.New[[sha256.Size]byte, time.Time](clientAuthSize)
	return &clientAuths{macs: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}, cache: c, now: time.Now}
}

func (a *clientAuths) digest(id, secret string) [sha256.Size]byte {
	m := a.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	var d [sha256.Size]byte
	m.Sum(d[:0])
	a.macs.Put(m)
	return d
}

// verified reports whether id and secret were verified less than
// clientAuthTTL ago.
func (a *clientAuths) verified(d [sha256.Size]byte) bool {
	until, ok := a.cache.Get(d)
	return ok && a.now().Before(until)
}

// remember records a verification the subgraph just made.
func (a *clientAuths) remember(d [sha256.Size]byte) {
	a.cache.Add(d, a.now().Add(clientAuthTTL))
}
