package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

func TestIdempotencyRules(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		svc := idempotency.New(sqlstore.New(db).Idempotency())
		svc.Now = func() time.Time { return now }
		h1, h2 := idempotency.RequestHash("POST", "/v1/ai/cigars/identify", []byte(`{"a":1}`)), idempotency.RequestHash("POST", "/v1/ai/cigars/identify", []byte(`{"a":2}`))
		begin := func(scope, key, hash string, want idempotency.Outcome) idempotency.Decision {
			t.Helper()
			got, err := svc.Begin(ctx, scope, key, hash)
			if err != nil || got.Outcome != want {
				t.Fatalf("Begin(%s, %s) = %v, %v; want %v", scope, key, got.Outcome, err, want)
			}
			return got
		}
		expect := func(scope, key, hash string, want idempotency.Outcome) *idempotency.Response {
			t.Helper()
			return begin(scope, key, hash, want).Response
		}
		first := begin("key_a", "k1", h1, idempotency.Proceed).Claim
		expect("key_a", "k1", h1, idempotency.InFlight)
		expect("key_a", "k1", h2, idempotency.Mismatch)
		expect("key_b", "k1", h2, idempotency.Proceed) // keys are scoped per developer key
		stored := idempotency.Response{Status: 200, Header: map[string]string{"X-Service-Ai-Credits-Remaining": "99"}, Body: []byte(`{"status":"matched"}`)}
		if err := svc.Finish(ctx, first, stored); err != nil {
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
		failed := begin("key_a", "k2", h1, idempotency.Proceed).Claim
		if err := svc.Release(ctx, failed); err != nil {
			t.Fatal(err)
		}
		slow := begin("key_a", "k2", h2, idempotency.Proceed).Claim
		// A request that died without finishing frees its key after the lease.
		now = now.Add(idempotency.DefaultLease + time.Second)
		taker := begin("key_a", "k2", h1, idempotency.Proceed).Claim
		// The request that outlived its lease can neither release nor finish the
		// claim that took its key over.
		if err := svc.Release(ctx, slow); err != nil {
			t.Fatal(err)
		}
		expect("key_a", "k2", h1, idempotency.InFlight)
		if err := svc.Finish(ctx, slow, idempotency.Response{Status: 200, Body: []byte(`{"late":true}`)}); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Fatalf("a lapsed claim finished: %v", err)
		}
		if err := svc.Finish(ctx, taker, stored); err != nil {
			t.Fatal(err)
		}
		if got := expect("key_a", "k2", h1, idempotency.Replay); string(got.Body) != string(stored.Body) {
			t.Fatalf("replayed %s", got.Body)
		}
		// Stored responses last 24 hours, then the key is new again.
		now = now.Add(time.Hour)
		expect("key_a", "k1", h2, idempotency.Proceed)

		for _, bad := range []string{"", "has space", "ümlaut", string(make([]byte, 201))} {
			if _, err := svc.Begin(ctx, "key_a", bad, h1); err != idempotency.ErrInvalid {
				t.Errorf("key %q: %v", bad, err)
			}
		}
	})
}

// A response is kept for the retention from when it finished: one finished
// within its lease (the claim's expiry covers it) and one finished after its
// lease ran out, its key not taken over (its expiry is moved).
func TestIdempotencyRetentionFromFinish(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		now := start
		svc := idempotency.New(sqlstore.New(db).Idempotency())
		svc.Now = func() time.Time { return now }
		hash := idempotency.RequestHash("POST", "/p", []byte("{}"))
		stored := idempotency.Response{Status: 201, Body: []byte(`{"id":"x"}`)}
		for _, took := range []time.Duration{time.Second, idempotency.DefaultLease + time.Hour} {
			now = start
			key := fmt.Sprint("took-", took)
			d, err := svc.Begin(ctx, "key_a", key, hash)
			if err != nil || d.Outcome != idempotency.Proceed {
				t.Fatalf("%s: %v %v", key, d.Outcome, err)
			}
			now = now.Add(took)
			if err := svc.Finish(ctx, d.Claim, stored); err != nil {
				t.Fatalf("%s: finish: %v", key, err)
			}
			for _, tt := range []struct {
				after time.Duration
				want  idempotency.Outcome
			}{{idempotency.DefaultRetention - time.Minute, idempotency.Replay}, {idempotency.DefaultRetention + idempotency.DefaultLease + time.Second, idempotency.Proceed}} {
				now = start.Add(took + tt.after)
				if got, err := svc.Begin(ctx, "key_a", key, hash); err != nil || got.Outcome != tt.want {
					t.Fatalf("%s, %s after it finished: %v %v, want %v", key, tt.after, got.Outcome, err, tt.want)
				}
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
				got, err := svc.Begin(context.Background(), "key_a", "same", hash)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
				}
				outcomes[got.Outcome]++
			})
		}
		wg.Wait()
		if outcomes[idempotency.Proceed] != 1 || outcomes[idempotency.InFlight] != 49 {
			t.Fatalf("outcomes %v, want one Proceed and 49 InFlight", fmt.Sprint(outcomes))
		}
	})
}
