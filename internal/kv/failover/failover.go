// Package failover keeps the key-value layer answering while Redis does not.
// Store is a circuit breaker around a primary store (Redis): after repeated
// failures it stops calling the primary and serves every call from an
// in-process kv/memory store, until one background probe finds the primary
// answering again. No request ever waits for the primary while the breaker is
// open; what is shared between replicas (quotas, sign-in limits, persisted
// queries) is per replica meanwhile.
package failover

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/memory"
)

// The breaker's timings (docs/operations/deploying.md repeats them).
const (
	// DefaultFailures failed calls in a row open the breaker; a refused
	// connection opens it at once (nothing listens: no use trying again).
	DefaultFailures = 3
	// DefaultMinBackoff is the wait before the first probe of an open
	// breaker; each failed probe doubles it, up to DefaultMaxBackoff.
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
	// DefaultProbeTimeout bounds one probe (a Ping).
	DefaultProbeTimeout = time.Second
	// DefaultSetBytes bounds the values Set puts in the fallback during one
	// outage (persisted queries' texts, kept 24 hours): past it they are not
	// kept, as if expired, so an outage cannot grow the process unbounded.
	DefaultSetBytes = 16 << 20
)

// Options tune the breaker; zero fields take the defaults above.
type Options struct {
	Failures     int
	MinBackoff   time.Duration
	MaxBackoff   time.Duration
	ProbeTimeout time.Duration
	SetBytes     int64
	// StartOpen starts with the breaker open (the primary did not answer at
	// start): calls go to the fallback until a probe succeeds.
	StartOpen bool
	// OnChange is called once on each change of state: open with the error
	// that opened it, closed (open false) when a probe succeeded. It must not
	// block: it logs and sets a gauge.
	OnChange func(open bool, err error)
	// Now and After are the clock (nil: the time package's); tests pass a
	// fake one.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// ErrFallback is what Ping answers while the breaker is open: the primary is
// unreachable and the in-process fallback serves.
var ErrFallback = errors.New("kv: the shared store is unreachable; serving from the in-process fallback until it answers")

// Store implements kv.Store over a primary and its fallback.
type Store struct {
	primary  kv.Store
	o        Options
	open     atomic.Bool
	failures atomic.Int64
	fallback atomic.Pointer[memory.Store]
	setBytes atomic.Int64 // what Set put in the fallback since it was made

	mu   sync.Mutex // serializes opening and closing
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

var _ kv.Store = (*Store)(nil)

// New wraps primary; Close closes it too.
func New(primary kv.Store, o Options) *Store {
	if o.Failures <= 0 {
		o.Failures = DefaultFailures
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.SetBytes <= 0 {
		o.SetBytes = DefaultSetBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	s := &Store{primary: primary, o: o, stop: make(chan struct{})}
	s.fallback.Store(memory.New(o.Now))
	if o.StartOpen {
		s.trip(ErrFallback)
	}
	return s
}

// Degraded reports whether the breaker is open: the fallback serves.
func (s *Store) Degraded() bool { return s.open.Load() }

// call runs f on the primary, or on the fallback while the breaker is open
// and when the primary fails (the caller gets an answer either way).
func call[T any](s *Store, ctx context.Context, f func(kv.Store) (T, error)) (T, error) {
	if s.open.Load() {
		return f(s.fallback.Load())
	}
	v, err := f(s.primary)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		if s.failures.Load() != 0 { // no write on the hot path
			s.failures.Store(0)
		}
		return v, err
	}
	if ctx.Err() != nil {
		return v, err // the caller gave up: that says nothing of the primary
	}
	s.failed(err)
	return f(s.fallback.Load())
}

// failed counts a failure of the primary and opens the breaker after
// Failures in a row, or at once when the connection was refused.
func (s *Store) failed(err error) {
	if s.failures.Add(1) >= int64(s.o.Failures) || errors.Is(err, syscall.ECONNREFUSED) {
		s.trip(err)
	}
}

// trip opens the breaker (once) and starts its single probe loop.
func (s *Store) trip(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open.Load() {
		return
	}
	select {
	case <-s.stop:
		return // closed
	default:
	}
	s.open.Store(true)
	s.failures.Store(0)
	if s.o.OnChange != nil {
		s.o.OnChange(true, err)
	}
	s.wg.Add(1)
	go s.probe()
}

// probe pings the primary after a growing back-off until it answers, then
// closes the breaker. Only this goroutine probes: one per opening.
func (s *Store) probe() {
	defer s.wg.Done()
	wait := s.o.MinBackoff
	for {
		select {
		case <-s.o.After(wait):
		case <-s.stop:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.o.ProbeTimeout)
		err := s.primary.Ping(ctx)
		cancel()
		if err == nil {
			break
		}
		wait = min(2*wait, s.o.MaxBackoff)
	}
	s.mu.Lock()
	// What the fallback counted belongs to the outage: the next one starts
	// empty, and its memory is freed now.
	old := s.fallback.Swap(memory.New(s.o.Now))
	s.setBytes.Store(0)
	s.failures.Store(0)
	s.open.Store(false)
	if s.o.OnChange != nil {
		s.o.OnChange(false, nil)
	}
	s.mu.Unlock()
	old.Close()
}

func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	return call(s, ctx, func(st kv.Store) ([]byte, error) { return st.Get(ctx, key) })
}

func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	_, err := call(s, ctx, func(st kv.Store) (struct{}, error) {
		if st != s.primary && s.setBytes.Add(int64(len(value))) > s.o.SetBytes {
			return struct{}{}, nil // not kept: see DefaultSetBytes
		}
		return struct{}{}, st.Set(ctx, key, value, ttl)
	})
	return err
}

func (s *Store) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	return call(s, ctx, func(st kv.Store) (bool, error) { return st.SetNX(ctx, key, value, ttl) })
}

func (s *Store) DeleteIfEqual(ctx context.Context, key string, value []byte) (bool, error) {
	return call(s, ctx, func(st kv.Store) (bool, error) { return st.DeleteIfEqual(ctx, key, value) })
}

func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := call(s, ctx, func(st kv.Store) (struct{}, error) { return struct{}{}, st.Delete(ctx, key) })
	return err
}

func (s *Store) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	return call(s, ctx, func(st kv.Store) (int64, error) { return st.Incr(ctx, key, ttl) })
}

func (s *Store) Spend(ctx context.Context, key string, b kv.Bucket, cost int64) (kv.Spent, error) {
	return call(s, ctx, func(st kv.Store) (kv.Spent, error) { return st.Spend(ctx, key, b, cost) })
}

// Ping is the readiness check: ErrFallback while the breaker is open (the
// platform works, but without the state replicas share), else the primary's
// answer, counted like any call's.
func (s *Store) Ping(ctx context.Context) error {
	if s.open.Load() {
		return ErrFallback
	}
	err := s.primary.Ping(ctx)
	if err != nil && ctx.Err() == nil {
		s.failed(err)
	}
	return err
}

// Close stops the probe and closes both stores.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.stop)
		s.mu.Unlock()
	})
	s.wg.Wait()
	s.fallback.Load().Close()
	return s.primary.Close()
}
