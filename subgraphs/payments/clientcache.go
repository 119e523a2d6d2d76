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
// process (the vitola CLI, another replica) is seen within this time.
const ClientCacheTTL = time.Second

// clientCacheSize bounds the cache. Only clients that exist are cached (an
// unknown ID is read from the store every time), so it holds every active
// client of all but the largest deployments.
const clientCacheSize = 4096

// clientCache keeps service client rows for ClientCacheTTL.
type clientCache struct {
	ttl   time.Duration
	now   func() time.Time // real time: the grace period uses Service.Now
	cache *lru.Cache[string, cachedClient]

	mu sync.Mutex
	// gen counts forgets per client, so a read that raced with a forget
	// does not store the row it read before the change.
	gen map[string]uint64
}

type cachedClient struct {
	c       *Client
	expires time.Time
}

func newClientCache(ttl time.Duration) *clientCache {
	c, _ := lru.New[string, cachedClient](clientCacheSize)
	return &clientCache{ttl: ttl, now: time.Now, cache: c, gen: map[string]uint64{}}
}

// get returns the client's row, from the cache while it is fresh. Callers
// must not change it: it is shared.
func (cc *clientCache) get(ctx context.Context, st Clients, id string) (*Client, error) {
	if e, ok := cc.cache.Get(id); ok && cc.now().Before(e.expires) {
		return e.c, nil
	}
	cc.mu.Lock()
	gen := cc.gen[id]
	cc.mu.Unlock()
	c, err := st.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.gen[id] == gen {
		cc.cache.Add(id, cachedClient{c: c, expires: cc.now().Add(cc.ttl)})
	}
	cc.mu.Unlock()
	return c, nil
}

// forget drops a client's row after this process changed it.
func (cc *clientCache) forget(id string) {
	cc.mu.Lock()
	cc.gen[id]++
	cc.cache.Remove(id)
	cc.mu.Unlock()
}
