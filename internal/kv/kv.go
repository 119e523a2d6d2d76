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
	// Ping checks the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// ErrNotFound is returned by Get for a missing or expired key.
var ErrNotFound = errors.New("kv: key not found")
