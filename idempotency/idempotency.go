// Package idempotency makes retried requests safe: a client names a request with
// an Idempotency-Key, the first request with that key runs, and later ones with
// the same key and the same body get the stored response instead of running (and
// charging) again. Paid routes (AI now, payments later) share it.
//
// Rules, per scope (a developer key: one key never sees another's records):
//   - a new key claims a record "in flight" for Lease, then runs;
//   - the same key while the first request runs: InFlight (HTTP 409);
//   - the same key with another request body: Mismatch (HTTP 422);
//   - the same key after a success: Replay of the stored response, kept for at
//     least Retention (24 hours) in SQL, so a restart changes nothing;
//   - a failed request releases its key (its credits are released too), so the
//     client may retry it with the same key.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"
)

// MaxKeyLength bounds an Idempotency-Key.
const MaxKeyLength = 200

// ValidKey reports whether k is a usable Idempotency-Key: 1 to 200 letters,
// digits, '.', '_', ':' or '-' (a UUID fits).
func ValidKey(k string) bool {
	if k == "" || len(k) > MaxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// RequestHash identifies a request's content: its method, its path and its body.
func RequestHash(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Response is a stored response, replayed as it was.
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
}

// Record is what the store keeps for one key.
type Record struct {
	Scope, Key  string
	RequestHash string
	Done        bool
	// LockedUntil ends an in-flight claim (a crashed request frees its key then);
	// ExpiresAt ends a stored response.
	LockedUntil, ExpiresAt time.Time
	Response               *Response
}

// Store keeps records durably.
type Store interface {
	// Claim stores r (in flight) unless a live record holds its scope and key;
	// then it returns that record. A record that has expired or whose claim has
	// lapsed is replaced. Exactly one of many concurrent claims wins.
	Claim(ctx context.Context, r Record, now time.Time) (existing *Record, err error)
	// Finish stores the response of a claimed key until expiresAt.
	Finish(ctx context.Context, scope, key string, resp Response, expiresAt time.Time) error
	// Release forgets a claimed key that did not finish.
	Release(ctx context.Context, scope, key string) error
	// Purge removes records that expired before t.
	Purge(ctx context.Context, before time.Time) (int, error)
}

// Outcome is what Begin decided.
type Outcome int

const (
	// Proceed: the key is claimed; run the request, then Finish or Release.
	Proceed Outcome = iota
	// Replay: send the stored response.
	Replay
	// InFlight: a request with this key is running.
	InFlight
	// Mismatch: the key was used with another request.
	Mismatch
)

// Defaults.
const (
	DefaultRetention = 24 * time.Hour
	DefaultLease     = 2 * time.Minute
)

// Service applies the rules over a Store.
type Service struct {
	Store     Store
	Retention time.Duration
	Lease     time.Duration
	Now       func() time.Time

	lastPurge atomic.Int64 // unix nanoseconds
}

// New returns a service with the default retention and lease.
func New(store Store) *Service {
	return &Service{Store: store, Retention: DefaultRetention, Lease: DefaultLease, Now: time.Now}
}

// ErrInvalid is returned for a key that ValidKey refuses.
var ErrInvalid = errors.New("an Idempotency-Key header is required: 1 to 200 letters, digits, '.', '_', ':' or '-' (a UUID works)")

// Begin decides what to do with a request keyed by (scope, key) whose content
// hashes to hash. On Replay it returns the stored response.
func (s *Service) Begin(ctx context.Context, scope, key, hash string) (Outcome, *Response, error) {
	if !ValidKey(key) {
		return 0, nil, ErrInvalid
	}
	now := s.Now()
	s.purgeNow(ctx, now)
	existing, err := s.Store.Claim(ctx, Record{Scope: scope, Key: key, RequestHash: hash, LockedUntil: now.Add(s.Lease), ExpiresAt: now.Add(s.Lease)}, now)
	switch {
	case err != nil:
		return 0, nil, err
	case existing == nil:
		return Proceed, nil, nil
	case existing.RequestHash != hash:
		return Mismatch, nil, nil
	case !existing.Done:
		return InFlight, nil, nil
	default:
		return Replay, existing.Response, nil
	}
}

// Finish stores a claimed request's response for Retention.
func (s *Service) Finish(ctx context.Context, scope, key string, resp Response) error {
	return s.Store.Finish(ctx, scope, key, resp, s.Now().Add(s.Retention))
}

// Release frees a claimed key whose request failed, so it may be retried.
func (s *Service) Release(ctx context.Context, scope, key string) error {
	return s.Store.Release(ctx, scope, key)
}

// purgeNow removes expired records at most once an hour per process; the
// deletes are idempotent, so replicas purging together is harmless.
func (s *Service) purgeNow(ctx context.Context, now time.Time) {
	last := s.lastPurge.Load()
	if now.UnixNano()-last < int64(time.Hour) || !s.lastPurge.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	s.Store.Purge(ctx, now) // best effort: a failed purge retries in an hour
}
