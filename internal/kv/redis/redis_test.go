package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/kv/redis"
)

// TestContract runs against a real Redis server (VITOLA_TEST_REDIS_URL), each store
// under a key prefix of its own.
func TestContract(t *testing.T) {
	url := kvtest.RedisURL(t)
	h := kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			s, err := redis.Open(context.Background(), url, kvtest.Prefix("kv"))
			if err != nil {
				t.Fatalf("Redis unreachable: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: time.Sleep, // a real server's TTLs run on its own clock
	}
	kvtest.Run(t, h)
	t.Run("Limiter", func(t *testing.T) { kvtest.RunLimiter(t, h) })
	t.Run("Spend", func(t *testing.T) { kvtest.RunSpend(t, h) })
	t.Run("SpendConcurrent", func(t *testing.T) { kvtest.RunSpendConcurrent(t, h) })
}
