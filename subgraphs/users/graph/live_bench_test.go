package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// BenchmarkFanOut is one session event, written through the internal field,
// until every one of n sessionStarted subscribers on one replica has it over
// SSE (loopback, SQLite): the write, the bus, each stream's filter and
// rendering, and the HTTP streams.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			db, err := sqldb.Open(context.Background(), sqldb.Config{DataDir: filepath.Join(b.TempDir())}, sqlstore.StoreName, sqlstore.Migrations)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			st := sqlstore.New(db)
			r := newReplica(b, st, bus.NewLocal(0))
			ana := newUser(b, st, "Ana", false)
			venue := ids.Derive(ids.Venue, "b")
			streams := make([]*sseStream, n)
			for i := range streams {
				streams[i] = r.subscribe(trust.Identity{KeyID: "key_bench"}, sessionStartedQ, map[string]any{"venue": venue})
			}
			r.waitSubscribed(int64(n))
			b.ResetTimer()
			for range b.N {
				r.start(ana, "public", venue, "")
				for _, s := range streams {
					<-s.events
				}
			}
			b.StopTimer()
			for _, s := range streams {
				s.cancel()
			}
		})
	}
}
