package graph_test

import (
	"testing"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
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
