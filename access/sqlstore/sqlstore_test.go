package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

// clock is a settable clock for the key cache.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestKeys(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		svc := access.NewService(sqlstore.New(db), clk.Now)

		k, plain, err := svc.CreateKey(ctx, "ci", []string{access.EntitlementAI, access.EntitlementAI})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k.ID, "key_") || !strings.HasPrefix(plain, "vk_") || !k.Has(access.EntitlementAI) || len(k.Entitlements) != 1 {
			t.Fatalf("created %+v / %q", k, plain)
		}
		// The secret is not stored: nothing in the table contains it.
		var n int
		secret := plain[strings.LastIndex(plain, "_")+1:]
		db.GetContext(ctx, &n, db.Rebind(`SELECT COUNT(*) FROM developer_keys WHERE secret_hash = ? OR name = ?`), secret, secret)
		if n != 0 {
			t.Fatal("plain secret found in the store")
		}

		got, err := svc.Authenticate(ctx, plain)
		if err != nil || got.ID != k.ID || !got.CreatedAt.Equal(k.CreatedAt) {
			t.Fatalf("Authenticate = %+v, %v", got, err)
		}
		// The last character changed (to one it is not: a fixed "A" would be
		// no change one time in 62).
		last := "A"
		if strings.HasSuffix(plain, last) {
			last = "B"
		}
		for _, bad := range []string{"", "vk_", "nope", plain + "x", plain[:len(plain)-1] + last, strings.Replace(plain, "vk_", "vk_x", 1)} {
			if _, err := svc.Authenticate(ctx, bad); err == nil {
				t.Errorf("Authenticate(%q) succeeded", bad)
			}
		}

		if _, _, err := svc.CreateKey(ctx, "x", []string{"api.everything"}); !errors.Is(err, access.ErrEntitlement) {
			t.Fatalf("unknown entitlement: %v", err)
		}
		if _, _, err := svc.CreateKey(ctx, "  ", nil); !errors.Is(err, access.ErrBadName) {
			t.Fatalf("blank name: %v", err)
		}

		if err := svc.RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if err := svc.RevokeKey(ctx, k.ID); !errors.Is(err, access.ErrAlreadyGone) {
			t.Fatalf("second revoke: %v", err)
		}
		if err := svc.RevokeKey(ctx, "key_0000000000000000"); !errors.Is(err, access.ErrKeyNotFound) {
			t.Fatalf("revoke unknown: %v", err)
		}
		// Within the cache window the old verdict may stand; after it, never.
		clk.Advance(access.CacheTTL + time.Millisecond)
		if _, err := svc.Authenticate(ctx, plain); !errors.Is(err, access.ErrRevokedKey) {
			t.Fatalf("revoked key: %v", err)
		}

		// Revoking by the plain key works too.
		_, plain2, _ := svc.CreateKey(ctx, "second", nil)
		if err := svc.RevokeKey(ctx, plain2); err != nil {
			t.Fatal(err)
		}
		keys, err := svc.ListKeys(ctx)
		if err != nil || len(keys) != 2 || keys[0].RevokedAt == nil || keys[1].RevokedAt == nil {
			t.Fatalf("ListKeys = %+v, %v", keys, err)
		}
	})
}

func TestKeyLimits(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		svc := access.NewService(sqlstore.New(db), clk.Now)
		k, plain, err := svc.CreateKey(ctx, "limited", nil)
		if err != nil {
			t.Fatal(err)
		}
		if k.Limits != (access.Limits{}) {
			t.Fatalf("a new key has limits %+v", k.Limits)
		}
		if err := svc.SetKeyLimits(ctx, plain, access.Limits{RPS: 7, CostPerMinute: 900}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(access.CacheTTL + time.Millisecond)
		got, err := svc.Authenticate(ctx, plain)
		if err != nil || got.Limits != (access.Limits{RPS: 7, CostPerMinute: 900}) {
			t.Fatalf("after SetKeyLimits: %+v, %v", got.Limits, err)
		}
		if err := svc.SetKeyLimits(ctx, k.ID, access.Limits{RPS: 7}); err != nil {
			t.Fatal(err)
		}
		if keys, _ := svc.ListKeys(ctx); len(keys) != 1 || keys[0].Limits != (access.Limits{RPS: 7}) {
			t.Fatalf("ListKeys after resetting the cost limit: %+v", keys)
		}
		if err := svc.SetKeyLimits(ctx, "key_0000000000000000", access.Limits{RPS: 1}); !errors.Is(err, access.ErrKeyNotFound) {
			t.Fatalf("unknown key: %v", err)
		}
		if err := svc.SetKeyLimits(ctx, k.ID, access.Limits{RPS: -1}); !errors.Is(err, access.ErrBadLimit) {
			t.Fatalf("negative limit: %v", err)
		}
	})
}

// TestOriginsRegistered: a CORS preflight's origin is registered while a live
// publishable key lists it, and not once the key is revoked (after the
// cache); a secret key's name or an origin no key lists never is. Concurrent
// preflights with a stale cache read the store once.
func TestOriginsRegistered(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		store := &countingOrigins{Store: sqlstore.New(db)}
		svc := access.NewService(store, clk.Now)
		shop, _, err := svc.CreatePublishableKey(ctx, "shop", []string{"https://shop.example", "https://www.shop.example"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.CreatePublishableKey(ctx, "blog", []string{"https://blog.example"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.CreateKey(ctx, "https://secret.example", nil); err != nil {
			t.Fatal(err)
		}
		registered := func(origin string, want bool) {
			t.Helper()
			if ok, err := svc.OriginRegistered(ctx, origin); err != nil || ok != want {
				t.Fatalf("OriginRegistered(%q) = %v, %v; want %v", origin, ok, err, want)
			}
		}
		registered("https://www.shop.example", true)
		registered("https://blog.example", true)
		registered("https://secret.example", false)
		registered("https://other.example", false)

		if err := svc.RevokeKey(ctx, shop.ID); err != nil {
			t.Fatal(err)
		}
		clk.Advance(access.CacheTTL + time.Millisecond)
		before := store.reads.Load()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { registered("https://shop.example", false) })
		}
		wg.Wait()
		registered("https://blog.example", true)
		if n := store.reads.Load() - before; n != 1 {
			t.Fatalf("21 preflights with a stale cache read the origins %d times; want once", n)
		}

		// A store that does not answer holds a preflight no longer than its
		// request lasts, and the next preflight, after the store is back,
		// gets the answer.
		clk.Advance(access.CacheTTL + time.Millisecond)
		store.stall = make(chan struct{})
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := svc.OriginRegistered(short, "https://blog.example"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a preflight while the store hangs: %v; want its own deadline", err)
		}
		close(store.stall)
		registered("https://blog.example", true)
	})
}

// countingOrigins counts the store's reads of the registered origins; while
// stall is open, a read waits for it to close first.
type countingOrigins struct {
	*sqlstore.Store
	reads atomic.Int64
	stall chan struct{}
}

func (c *countingOrigins) RegisteredOrigins(ctx context.Context) ([]string, error) {
	c.reads.Add(1)
	if c.stall != nil {
		<-c.stall
	}
	return c.Store.RegisteredOrigins(ctx)
}
