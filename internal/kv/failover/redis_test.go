package failover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/failover"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	kvredis "github.com/vitolahq/vitola/internal/kv/redis"
)

// TestRedisKilledAndRestarted runs the breaker over a redis-server of the
// test's own, kills it (SIGKILL) and starts it again on the same port: calls
// during the outage answer at once from the fallback, and the breaker goes
// back to Redis after the restart.
func TestRedisKilledAndRestarted(t *testing.T) {
	ctx := context.Background()
	srv := kvtest.StartRedisServer(t)
	prefix := kvtest.Prefix("failover")
	primary, err := kvredis.New(srv.URL(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan bool, 10)
	s := failover.New(primary, failover.Options{OnChange: func(open bool, _ error) { changes <- open }})
	defer s.Close()
	// A second client, to see what reached Redis.
	direct, err := kvredis.New(srv.URL(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	if err := s.Set(ctx, "up", []byte("1"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := direct.Get(ctx, "up"); err != nil || string(v) != "1" {
		t.Fatalf("the breaker did not write to Redis: %q %v", v, err)
	}

	srv.Kill()
	b := kv.Bucket{Limit: 1000, Period: time.Minute}
	start := time.Now()
	var slowest time.Duration
	for i := range 300 {
		t0 := time.Now()
		sp, err := s.Spend(ctx, "quota", b, 1)
		if err != nil || !sp.OK || sp.Remaining != int64(999-i) {
			t.Fatalf("Spend %d with Redis down = %+v, %v; want the fallback's bucket", i, sp, err)
		}
		if _, err := s.Incr(ctx, "signin", time.Minute); err != nil {
			t.Fatalf("Incr with Redis down: %v", err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	elapsed := time.Since(start)
	t.Logf("600 calls with Redis down took %v (slowest pair %v)", elapsed, slowest)
	if !s.Degraded() {
		t.Fatal("the breaker is still closed with Redis killed")
	}
	if open := <-changes; !open {
		t.Fatal("first change was not an opening")
	}
	// Quiet, 600 in-process calls take a few milliseconds and the calls
	// before the breaker opened fail at once (the connection is refused);
	// 5 s would mean calls wait for Redis.
	if elapsed > 5*time.Second || slowest > 2*time.Second {
		t.Fatalf("calls stalled with Redis down: %v in all, slowest %v", elapsed, slowest)
	}
	if err := s.Ping(ctx); !errors.Is(err, failover.ErrFallback) {
		t.Fatalf("Ping with Redis down = %v", err)
	}

	srv.Start()
	select {
	case open := <-changes:
		if open {
			t.Fatal("opened twice")
		}
	case <-time.After(60 * time.Second): // back-offs of 0.5 to 10 s
		t.Fatal("the breaker did not close within 60 s of Redis's restart")
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
	if err := s.Set(ctx, "again", []byte("2"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := direct.Get(ctx, "again"); err != nil || string(v) != "2" {
		t.Fatalf("after the restart the breaker did not write to Redis: %q %v", v, err)
	}
}
