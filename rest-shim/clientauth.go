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
	return &clientAuths{macs: sync.Pool{New: func() any { return &mac{h: hmac.New(sha256.New, key)} }}, cache: c, now: time.Now}
}

// mac is a pooled HMAC with the buffers it writes and sums into.
type mac struct {
	h        hash.Hash
	buf, sum []byte
}

func (a *clientAuths) digest(id, secret string) [sha256.Size]byte {
	p := a.macs.Get().(*mac)
	p.h.Reset()
	// One write of id, a zero byte and secret from the MAC's own buffer:
	// each conversion to []byte for a Write was an allocation per request.
	p.buf = append(append(append(p.buf[:0], id...), 0), secret...)
	p.h.Write(p.buf)
	clear(p.buf) // the secret does not wait in the pool
	p.sum = p.h.Sum(p.sum[:0])
	d := [sha256.Size]byte(p.sum)
	a.macs.Put(p)
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
