package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/idempotency"
	"github.com/vitolahq/vitola/sqldb"
	"github.com/vitolahq/vitola/sqldb/sqldbtest"
)

func TestIdempotencyRules(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		svc := idempotency.New(sqlstore.New(db).Idempotency())
		svc.Now = func() time.Time { return now }
		h1, h2 := idempotency.RequestHash("POST", "/v1/ai/cigars/identify", []byte(`{"a":1}`)), idempotency.RequestHash("POST", "/v1/ai/cigars/identify", []byte(`{"a":2}`))
		expect := func(scope, key, hash string, want idempotency.Outcome) *idempotency.Response {
			t.Helper()
			got, resp, err := svc.Begin(ctx, scope, key, hash)
			if err != nil || got != want {
				t.Fatalf("Begin(%s, %s) = %v, %v; want %v", scope, key, got, err, want)
			}
			return resp
		}
		expect("key_a", "k1", h1, idempotency.Proceed)
		expect("key_a", "k1", h1, idempotency.InFlight)
		expect("key_a", "k1", h2, idempotency.Mismatch)
		expect("key_b", "k1", h2, idempotency.Proceed) // keys are scoped per developer key
		stored := idempotency.Response{Status: 200, Header: map[string]string{"X-Service-Ai-Credits-Remaining": "99"}, Body: []byte(`{"status":"matched"}`)}
		if err := svc.Finish(ctx, "key_a", "k1", stored); err != nil {
			t.Fatal(err)
		}

		// A restart changes nothing: a new service over the same database replays.
		svc = idempotency.New(sqlstore.New(db).Idempotency())
		svc.Now = func() time.Time { return now }
		now = now.Add(23 * time.Hour)
		if got := expect("key_a", "k1", h1, idempotency.Replay); got.Status != 200 || string(got.Body) != string(stored.Body) || got.Header["X-Service-Ai-Credits-Remaining"] != "99" {
			t.Fatalf("replayed %+v", got)
		}
		expect("key_a", "k1", h2, idempotency.Mismatch)

		// A failed request frees its key for a retry.
		expect("key_a", "k2", h1, idempotency.Proceed)
		if err := svc.Release(ctx, "key_a", "k2"); err != nil {
			t.Fatal(err)
		}
		expect("key_a", "k2", h2, idempotency.Proceed)
		// A request that died without finishing frees its key after the lease.
		now = now.Add(idempotency.DefaultLease + time.Second)
		expect("key_a", "k2", h1, idempotency.Proceed)
		// Stored responses last 24 hours, then the key is new again.
		now = now.Add(time.Hour)
		expect("key_a", "k1", h2, idempotency.Proceed)

		for _, bad := range []string{"", "has space", "ümlaut", string(make([]byte, 201))} {
			if _, _, err := svc.Begin(ctx, "key_a", bad, h1); err != idempotency.ErrInvalid {
				t.Errorf("key %q: %v", bad, err)
			}
		}
	})
}

// Fifty identical requests at once: exactly one runs.
func TestIdempotencyOneClaimWins(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		svc := idempotency.New(sqlstore.New(db).Idempotency())
		hash := idempotency.RequestHash("POST", "/p", []byte("{}"))
		var mu sync.Mutex
		outcomes := map[idempotency.Outcome]int{}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				got, _, err := svc.Begin(context.Background(), "key_a", "same", hash)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
				}
				outcomes[got]++
			})
		}
		wg.Wait()
		if outcomes[idempotency.Proceed] != 1 || outcomes[idempotency.InFlight] != 49 {
			t.Fatalf("outcomes %v, want one Proceed and 49 InFlight", fmt.Sprint(outcomes))
		}
	})
}
