package payments

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// ClientCacheTTL is how long a replica acts on a service client's row
// without reading it again. Every payments call authenticates its client and
// checks it is active (Authenticate, ActiveClient); reading the row each time
// was a store round trip or two per request. Revoking or rotating through the
// Service forgets the row at once in that process; a change made by another
// process (the vitola CLI, another replica) is seen within this time. A
// merchant account's row (whether it can take payments) is kept as long.
const ClientCacheTTL = time.Second

// fixedRowTTL is how long rows nothing changes once written (an offer, a
// billing account's owner) are kept: only the cache's size bounds them.
const fixedRowTTL = time.Hour

// rowCacheSize bounds each cache. Only rows that exist are cached (an
// unknown ID is read from the store every time), so it holds every active
// client, merchant account and offer of all but the largest deployments.
const rowCacheSize = 4096

// rowCache keeps rows a process reads on every request for ttl. Callers
// must not change a row it returns: it is shared.
type rowCache[T any] struct {
	ttl   time.Duration
	now   func() time.Time // real time: the grace period uses Service.Now
	cache *lru.Cache[string, cachedRow[T]]

	mu sync.Mutex
	// gen counts forgets per row, so a read that raced with a forget does
	// not store the row it read before the change.
	gen map[string]uint64
}

type cachedRow[T any] struct {
	v       T
	expires time.Time
}

func newRowCache[T any](ttl time.Duration) *rowCache[T] {
	c, _ := lru.New[string, cachedRow[T]](rowCacheSize)
	return &rowCache[T]{ttl: ttl, now: time.Now, cache: c, gen: map[string]uint64{}}
}

// peek returns the row while it is fresh.
func (rc *rowCache[T]) peek(id string) (T, bool) {
	if e, ok := rc.cache.Get(id); ok && rc.now().Before(e.expires) {
		return e.v, true
	}
	var zero T
	return zero, false
}

// generation is taken before reading a row that add stores.
func (rc *rowCache[T]) generation(id string) uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.gen[id]
}

// add stores a row read at generation gen, unless it was forgotten since.
func (rc *rowCache[T]) add(id string, v T, gen uint64) {
	rc.mu.Lock()
	if rc.gen[id] == gen {
		rc.cache.Add(id, cachedRow[T]{v: v, expires: rc.now().Add(rc.ttl)})
	}
	rc.mu.Unlock()
}

// get returns the row, from the cache while it is fresh, else read.
func (rc *rowCache[T]) get(ctx context.Context, id string, read func(context.Context, string) (T, error)) (T, error) {
	if v, ok := rc.peek(id); ok {
		return v, nil
	}
	gen := rc.generation(id)
	v, err := read(ctx, id)
	if err != nil {
		return v, err
	}
	rc.add(id, v, gen)
	return v, nil
}

// forget drops a row after this process changed it.
func (rc *rowCache[T]) forget(id string) {
	rc.mu.Lock()
	rc.gen[id]++
	rc.cache.Remove(id)
	rc.mu.Unlock()
}

// caches are the Service's row caches.
type caches struct {
	clients   *rowCache[*Client]
	merchants *rowCache[*MerchantAccount]
	offers    *rowCache[*Offer]
	// accounts hold a billing account's owner, without balances.
	accounts *rowCache[*Account]
}

func newCaches() *caches {
	return &caches{clients: newRowCache[*Client](ClientCacheTTL), merchants: newRowCache[*MerchantAccount](ClientCacheTTL),
		offers: newRowCache[*Offer](fixedRowTTL), accounts: newRowCache[*Account](fixedRowTTL)}
}

// sessionParts reads what a new session is checked against (Store.SessionParts)
// from the caches when they hold all of it: a shop's backend resolves the
// customer's account, then creates sessions for a few offers, and reading
// the three rows took a store round trip per create. An offer and an
// account's owner never change; a merchant account's readiness is seen
// within ClientCacheTTL, as a client's revocation is.
func (s *Service) sessionParts(ctx context.Context, accountID, offerID string) (*Account, *Offer, *MerchantAccount, error) {
	c := s.cached()
	a, aok := c.accounts.peek(accountID)
	o, ook := c.offers.peek(offerID)
	if aok && ook {
		if m, ok := c.merchants.peek(o.MerchantID); ok {
			return a, o, m, nil
		}
	}
	genA, genO := c.accounts.generation(accountID), c.offers.generation(offerID)
	var genM uint64
	if ook {
		genM = c.merchants.generation(o.MerchantID)
	}
	a, o, m, err := s.Store.SessionParts(ctx, accountID, offerID)
	if err != nil {
		return nil, nil, nil, err
	}
	if a != nil {
		c.accounts.add(a.ID, a, genA)
	}
	if o != nil && m != nil {
		c.offers.add(o.ID, o, genO)
		if ook {
			c.merchants.add(m.ID, m, genM)
		}
	}
	return a, o, m, nil
}

// cacheOwner keeps an account's owner after this process read it.
func (s *Service) cacheOwner(a *Account) {
	c := s.cached()
	owner := *a
	owner.Balances = map[string]Balance{}
	c.accounts.add(a.ID, &owner, c.accounts.generation(a.ID))
}
