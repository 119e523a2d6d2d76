package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/kv/redis"
)

// TestContract runs against a real Redis server (VITOLA_TEST_REDIS_URL), each store
// under a key prefix of its own.
func TestContract(t *testing.T) {
	url := os.Getenv("VITOLA_TEST_REDIS_URL")
	if url == "" {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1 but VITOLA_TEST_REDIS_URL is not set")
		}
		t.Skip("missing Redis: set VITOLA_TEST_REDIS_URL=redis://127.0.0.1:6379/0 to run these tests")
	}
	h := kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			b := make([]byte, 6)
			rand.Read(b)
			s, err := redis.Open(context.Background(), url, "vitola-test:kv:"+hex.EncodeToString(b)+":")
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
