// Package kv is the platform's small shared key-value layer: rate-limit counters,
// short-lived locks and caches. Redis serves it when REDIS_URL is set (shared by all
// replicas); otherwise an in-process store does, for the one-process default.
// Nothing that must survive a restart goes here: durable records live in SQL.
package kv

import (
	"context"
	"errors"
	"time"
)

// Store is implemented by kv/memory and kv/redis; kv/kvtest holds the contract
// tests both pass.
type Store interface {
	// Get returns the value of key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key for ttl (ttl > 0).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// SetNX stores value only when key is absent and reports whether it did: the
	// primitive of a short-lived lock.
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	// DeleteIfEqual removes key only while it still holds value (releasing a lock
	// one still owns), and reports whether it did.
	DeleteIfEqual(ctx context.Context, key string, value []byte) (bool, error)
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// Incr adds one to the counter at key and returns the new value; the first
	// increment starts the counter's ttl (a fixed-window rate limit).
	Incr(ctx context.Context, key string, ttl time.Duration) (int64, error)
	// Spend draws cost units from the token bucket at key (see Bucket) and
	// reports what is left; when fewer than cost units are there it draws
	// nothing. The store's own clock decides (Redis's, so replicas agree).
	Spend(ctx context.Context, key string, b Bucket, cost int64) (Spent, error)
	// Ping checks the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// ErrNotFound is returned by Get for a missing or expired key.
var ErrNotFound = errors.New("kv: key not found")

// Bucket is a quota of Limit units per Period that refills continuously (the
// generic cell rate algorithm: one unit every Period/Limit), and holds at most
// Limit units: a client may spend its whole quota at once, then at the rate.
type Bucket struct {
	Limit  int64
	Period time.Duration
}

// Spent is a bucket's state after a Spend.
type Spent struct {
	// OK reports whether the units were drawn.
	OK bool
	// Remaining is how many units are left (after the draw when OK).
	Remaining int64
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter, when not OK, is how long until cost units are there (zero
	// when cost is more than the bucket ever holds: it never will be).
	RetryAfter time.Duration
}

// Interval is the time one unit takes to refill, at least a microsecond (the
// resolution Redis's clock gives).
func (b Bucket) Interval() time.Duration {
	return max(b.Period/time.Duration(b.Limit), time.Microsecond)
}

// Draw is the arithmetic of Spend, shared by the stores: tat is the bucket's
// "theoretical arrival time" (when it will be full again; at or before now: it
// is full), and newTAT what to store when OK.
func (b Bucket) Draw(now, tat time.Time, cost int64) (sp Spent, newTAT time.Time) {
	if tat.Before(now) {
		tat = now
	}
	iv := b.Interval()
	next := tat.Add(time.Duration(cost) * iv)
	if cost <= b.Limit && next.Sub(now) <= b.Period {
		tat, sp.OK = next, true
	} else if cost <= b.Limit {
		sp.RetryAfter = next.Sub(now) - b.Period
	}
	sp.Reset = tat.Sub(now)
	sp.Remaining = int64((b.Period - sp.Reset) / iv)
	return sp, tat
}
