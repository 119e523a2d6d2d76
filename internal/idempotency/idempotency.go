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
//     client may retry it with the same key;
//   - only the request that claimed a key finishes or releases it: each claim
//     carries a random token, so a request that outlived its lease cannot
//     overwrite or free the claim of the request that took the key over.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/vitolahq/vitola/internal/telemetry"
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

// RequestHash identifies a request's content: its method, the route it calls
// (a name or path; aliases of one route should pass the same) and its body.
func RequestHash(method, route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + route + "\n"))
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
	// Token names the claim that holds the key in flight.
	Token string
	Done  bool
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
	// Finish stores the response of the claim c, kept at least until
	// expiresAt (longer when the claim's record was to expire later); it
	// returns ErrClaimLost when c no longer holds the key.
	Finish(ctx context.Context, c Claim, resp Response, expiresAt time.Time) error
	// Release forgets the claim c of a request that did not finish; a key that
	// c no longer holds is left alone.
	Release(ctx context.Context, c Claim) error
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

// Claim is a running request's hold on its key.
type Claim struct{ Scope, Key, Token string }

// Decision is what Begin decided: on Proceed the request holds Claim; on
// Replay, Response is the stored response.
type Decision struct {
	Outcome  Outcome
	Response *Response
	Claim    Claim
}

// ErrClaimLost: the claim lapsed and another request took the key over.
var ErrClaimLost = errors.New("the idempotency claim lapsed and another request took the key over")

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

// ErrRepeated is returned for a request with more than one Idempotency-Key
// header: which one names the request would depend on who reads it (the IETF
// draft makes it a 400).
var ErrRepeated = errors.New("send one Idempotency-Key header: this request has several")

// Header is the request header that names a request.
const Header = "Idempotency-Key"

// KeyFromHeader returns a request's Idempotency-Key: ErrRepeated when it sends
// several, ErrInvalid when it sends none or one ValidKey refuses.
func KeyFromHeader(h http.Header) (string, error) {
	vs := h.Values(Header)
	switch {
	case len(vs) > 1:
		return "", ErrRepeated
	case len(vs) == 0 || !ValidKey(vs[0]):
		return "", ErrInvalid
	}
	return vs[0], nil
}

// Begin decides what to do with a request keyed by (scope, key) whose content
// hashes to hash.
func (s *Service) Begin(ctx context.Context, scope, key, hash string) (Decision, error) {
	if !ValidKey(key) {
		return Decision{}, ErrInvalid
	}
	now := s.Now()
	s.purgeNow(ctx, now)
	c := Claim{Scope: scope, Key: key, Token: rand.Text()}
	// The claim's record expires when a response finished within the lease
	// is to: Finish then leaves the expiry alone (a store's index on it
	// unchanged). An unfinished record lapses at LockedUntil all the same.
	existing, err := s.Store.Claim(ctx, Record{Scope: scope, Key: key, RequestHash: hash, Token: c.Token, LockedUntil: now.Add(s.Lease), ExpiresAt: now.Add(s.Lease + s.Retention)}, now)
	switch {
	case err != nil:
		return Decision{}, err
	case existing == nil:
		return Decision{Outcome: Proceed, Claim: c}, nil
	case existing.RequestHash != hash:
		telemetry.FromContext(ctx).Idempotency("conflict")
		return Decision{Outcome: Mismatch}, nil
	case !existing.Done:
		telemetry.FromContext(ctx).Idempotency("in_flight")
		return Decision{Outcome: InFlight}, nil
	default:
		telemetry.FromContext(ctx).Idempotency("replayed")
		return Decision{Outcome: Replay, Response: existing.Response}, nil
	}
}

// retryDelays space the retries of Finish: a response that was paid for must
// not be lost to one failed write.
var retryDelays = []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond}

// Finish stores a claimed request's response for Retention, retrying a failed
// write twice.
func (s *Service) Finish(ctx context.Context, c Claim, resp Response) error {
	var err error
	for _, d := range retryDelays {
		if d > 0 { // the first write goes at once, without a timer to wait on
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			}
		}
		if err = s.Store.Finish(ctx, c, resp, s.Now().Add(s.Retention)); err == nil || errors.Is(err, ErrClaimLost) {
			return err
		}
	}
	return err
}

// Release frees a claimed key whose request failed, so it may be retried.
func (s *Service) Release(ctx context.Context, c Claim) error {
	return s.Store.Release(ctx, c)
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
