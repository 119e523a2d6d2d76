package kv

import (
	"context"
	"time"
)

// Limiter allows at most Max events per key in each Window (a fixed window, as
// Incr counts): enough to stop password guessing without a second store.
type Limiter struct {
	Store  Store
	Prefix string
	Max    int64
	Window time.Duration
}

// Allow counts one event for key and reports whether it is within the limit.
// When the store fails, it allows: a broken limiter must not lock everyone out.
func (l *Limiter) Allow(ctx context.Context, key string) bool {
	n, err := l.Store.Incr(ctx, l.Prefix+key, l.Window)
	return err != nil || n <= l.Max
}
