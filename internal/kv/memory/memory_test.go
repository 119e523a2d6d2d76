package memory_test

import (
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/kv/memory"
)

func TestContract(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			s := memory.New(clock)
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() },
	}
	kvtest.Run(t, h)
	t.Run("Limiter", func(t *testing.T) { kvtest.RunLimiter(t, h) })
	t.Run("Spend", func(t *testing.T) { kvtest.RunSpend(t, h) })
	t.Run("SpendConcurrent", func(t *testing.T) { kvtest.RunSpendConcurrent(t, h) })
}
