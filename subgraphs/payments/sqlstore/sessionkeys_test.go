package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// A create's key is written with its session: a second create under a live
// key writes nothing and gets the first one back; another client's key of
// the same name, or an expired key, is new work; expired keys are forgotten.
func TestKeptCreates(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st, a, merchantID, offerID, now := sessionStore(t, db)
		keep := func(s *payments.Session, client, key, hash string) *payments.KeptCreate {
			return &payments.KeptCreate{ClientID: client, Key: key, RequestHash: hash, SessionID: s.ID, Token: "token-of-" + s.ID,
				Document: payments.Document(`{"id":"` + s.ID + `"}`), ExpiresAt: s.CreatedAt.Add(payments.SessionKeyRetention)}
		}
		written := func(s *payments.Session, p *payments.Purchase) bool {
			_, serr := st.Session(ctx, s.ID)
			_, perr := st.Purchase(ctx, p.ID)
			if (serr == nil) != (perr == nil) {
				t.Fatalf("session %v but purchase %v", serr, perr)
			}
			return serr == nil
		}

		s1, p1 := newSession(a, merchantID, offerID, "hash-1", now)
		k1 := keep(s1, "pcl_property", "order-7", "request-1")
		if earlier, err := st.CreateSession(ctx, s1, p1, k1); err != nil || earlier != nil || !written(s1, p1) {
			t.Fatalf("first create: %+v %v", earlier, err)
		}
		if got, err := st.KeptCreate(ctx, "pcl_property", "order-7", now); err != nil || !reflect.DeepEqual(got, k1) {
			t.Fatalf("KeptCreate = %+v, %v; want %+v", got, err, k1)
		}
		// The same key again, even with another request: nothing written.
		s2, p2 := newSession(a, merchantID, offerID, "hash-2", now.Add(time.Minute))
		if earlier, err := st.CreateSession(ctx, s2, p2, keep(s2, "pcl_property", "order-7", "request-2")); err != nil || !reflect.DeepEqual(earlier, k1) || written(s2, p2) {
			t.Fatalf("second create under the key: %+v %v", earlier, err)
		}
		// Another client's key of the same name is its own.
		s3, p3 := newSession(a, merchantID, offerID, "hash-3", now)
		if earlier, err := st.CreateSession(ctx, s3, p3, keep(s3, "pcl_other", "order-7", "request-1")); err != nil || earlier != nil || !written(s3, p3) {
			t.Fatalf("another client's key: %+v %v", earlier, err)
		}
		// Once expired, the key is new work again, and its record replaced.
		later := k1.ExpiresAt
		if _, err := st.KeptCreate(ctx, "pcl_property", "order-7", later); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("an expired key: %v", err)
		}
		s4, p4 := newSession(a, merchantID, offerID, "hash-4", later)
		k4 := keep(s4, "pcl_property", "order-7", "request-4")
		if earlier, err := st.CreateSession(ctx, s4, p4, k4); err != nil || earlier != nil || !written(s4, p4) {
			t.Fatalf("create under an expired key: %+v %v", earlier, err)
		}
		if got, err := st.KeptCreate(ctx, "pcl_property", "order-7", later); err != nil || !reflect.DeepEqual(got, k4) {
			t.Fatalf("the replaced key = %+v, %v; want %+v", got, err, k4)
		}
		// Forgetting removes expired keys only.
		if n, err := st.ForgetKeptCreates(ctx, k1.ExpiresAt); err != nil || n != 1 { // pcl_other's
			t.Fatalf("ForgetKeptCreates = %d, %v; want 1", n, err)
		}
		if _, err := st.KeptCreate(ctx, "pcl_property", "order-7", later); err != nil {
			t.Fatalf("a live key was forgotten: %v", err)
		}
	})
}

// Concurrent creates under one key write one session: each of the others
// waits for it and gets it back.
func TestKeptCreatesConcurrent(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st, a, merchantID, offerID, now := sessionStore(t, db)
		const n = 8
		var wg sync.WaitGroup
		sessions := make([]*payments.Session, n)
		earlier := make([]*payments.KeptCreate, n)
		errs := make([]error, n)
		for i := range n {
			s, p := newSession(a, merchantID, offerID, fmt.Sprint("hash-", i), now)
			sessions[i] = s
			k := &payments.KeptCreate{ClientID: "pcl_property", Key: "same", RequestHash: "request", SessionID: s.ID, Token: "t", Document: payments.Document(`{}`),
				ExpiresAt: now.Add(payments.SessionKeyRetention)}
			wg.Go(func() { earlier[i], errs[i] = st.CreateSession(ctx, s, p, k) })
		}
		wg.Wait()
		winner := ""
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("create %d: %v", i, errs[i])
			}
			if earlier[i] == nil {
				if winner != "" {
					t.Fatalf("two creates wrote under one key: %s and %s", winner, sessions[i].ID)
				}
				winner = sessions[i].ID
			}
		}
		for i := range n {
			_, err := st.Session(ctx, sessions[i].ID)
			if sessions[i].ID == winner {
				if err != nil {
					t.Fatalf("the winner's session: %v", err)
				}
				continue
			}
			if !errors.Is(err, payments.ErrNotFound) || earlier[i].SessionID != winner {
				t.Fatalf("create %d: session %v, earlier %+v; want none and %s", i, err, earlier[i], winner)
			}
		}
	})
}
