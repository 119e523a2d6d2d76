package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// TestAnsweredMeansSubscribed: the subgraph answers a subscription's SSE
// request (its headers reach the client) only once the resolver listens to
// the bus, so the router, which answers its own client then, misses nothing
// published after. Each stream is checked the moment its response arrives.
func TestAnsweredMeansSubscribed(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		r := newReplica(t, st, bus.NewLocal(0))
		id := newGrant(t, st, newUser(t, st, "Ana", false), "sessions:read").id
		for i := range 50 {
			s := r.subscribe(id, mySessionsQ, nil)
			if n := r.bus.Stats().Subscribers; n != 2 { // sessions and revocations
				t.Fatalf("run %d: %d bus subscriptions when the response came, want 2", i, n)
			}
			s.cancel()
			r.waitSubscribed(0)
		}
	})
}

// TestMySmokeSessionStartedRevokedBeforeListening: a token revoked before
// its stream listened (its revocation event gone already, as when another
// replica published it), while this replica's cached verdict still says
// live, ends the stream at once rather than at the next recheck.
func TestMySmokeSessionStartedRevokedBeforeListening(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		r := newReplica(t, st, bus.NewLocal(0))
		ana := newUser(t, st, "Ana", false)
		for try := 0; ; try++ {
			g := newGrant(t, st, ana, "sessions:read")
			warmed := time.Now()
			r.query("router", g.id, `{ me { id } }`, nil) // the verdict "live" is cached
			if err := st.RevokeAccessToken(context.Background(), g.id.TokenID, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			s := r.subscribe(g.id, mySessionsQ, nil)
			got := s.next(t)
			if got.code() == "UNAUTHENTICATED" && time.Since(warmed) >= oauth.RevocationCacheTTL && try < 5 {
				continue // a busy machine: the cached verdict expired first, as it may
			}
			if got.code() != "TOKEN_REVOKED" {
				t.Fatalf("first event %s %+v, want TOKEN_REVOKED", got.Data, got.Errors)
			}
			s.ended(t)
			break
		}
	})
}
