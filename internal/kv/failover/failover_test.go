package failover_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/failover"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/kv/memory"
)

// clock is a fake clock: After's channels fire when Advance passes them, and
// each After call reports the wait asked for on asked.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []waiter
	asked chan time.Duration
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), asked: make(chan time.Duration, 100)}
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.waits = append(c.waits, waiter{c.now.Add(d), ch})
	c.mu.Unlock()
	c.asked <- d
	return ch
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waits[:0]
	for _, w := range c.waits {
		if w.at.After(c.now) {
			kept = append(kept, w)
		} else {
			w.ch <- c.now
		}
	}
	c.waits = kept
}

// nextWait is the next back-off the breaker asks the clock for.
func (c *clock) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.asked:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the breaker never waited to probe")
		return 0
	}
}

// flaky is a primary that fails while fail holds an error, and counts what
// reaches it.
type flaky struct {
	kv.Store
	fail   atomic.Pointer[error]
	calls  atomic.Int64
	pinged chan error
}

func newFlaky() *flaky {
	return &flaky{Store: memory.New(nil), pinged: make(chan error, 100)}
}

func (f *flaky) setFail(err error) {
	if err == nil {
		f.fail.Store(nil)
		return
	}
	f.fail.Store(&err)
}

func (f *flaky) err() error {
	if e := f.fail.Load(); e != nil {
		return *e
	}
	return nil
}

func (f *flaky) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	f.calls.Add(1)
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.Store.Incr(ctx, key, ttl)
}

func (f *flaky) Get(ctx context.Context, key string) ([]byte, error) {
	f.calls.Add(1)
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, key)
}

func (f *flaky) Ping(context.Context) error {
	err := f.err()
	f.pinged <- err
	return err
}

func (f *flaky) waitPing(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.pinged:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the breaker never probed")
		return nil
	}
}

var (
	errTimeout = errors.New("i/o timeout")
	errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
)

type changes struct {
	mu   sync.Mutex
	seen []bool
}

func (c *changes) record(open bool, _ error) {
	c.mu.Lock()
	c.seen = append(c.seen, open)
	c.mu.Unlock()
}

func (c *changes) get() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.seen...)
}

func newBreaker(t *testing.T, primary kv.Store, o failover.Options) (*failover.Store, *clock, *changes) {
	clk, ch := newClock(), &changes{}
	o.Now, o.After, o.OnChange = clk.Now, clk.After, ch.record
	s := failover.New(primary, o)
	t.Cleanup(func() { s.Close() })
	return s, clk, ch
}

// TestContract: over a healthy primary the breaker is a kv.Store like any.
func TestContract(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			s := failover.New(memory.New(clock), failover.Options{Now: clock})
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() },
	}
	kvtest.Run(t, h)
	t.Run("Limiter", func(t *testing.T) { kvtest.RunLimiter(t, h) })
	t.Run("Spend", func(t *testing.T) { kvtest.RunSpend(t, h) })
}

// TestOpensAfterFailures: Failures failed calls in a row open the breaker
// (a success in between starts the count again), or one refused connection;
// every call still answers, from the fallback; once open, nothing reaches
// the primary and Ping says so.
func TestOpensAfterFailures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		err        error
		opensAfter int
	}{
		{"timeouts", errTimeout, 3},
		{"refused", errRefused, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := newFlaky()
			s, _, ch := newBreaker(t, primary, failover.Options{Failures: 3})
			primary.setFail(errTimeout)
			s.Incr(ctx, "n", time.Minute)
			primary.setFail(nil)
			if _, err := s.Incr(ctx, "n", time.Minute); err != nil || s.Degraded() {
				t.Fatalf("a success after a failure: %v, degraded %v", err, s.Degraded())
			}
			primary.setFail(tc.err)
			for i := 1; i <= tc.opensAfter; i++ {
				if s.Degraded() {
					t.Fatalf("open after %d failures, want %d", i-1, tc.opensAfter)
				}
				if n, err := s.Incr(ctx, "k", time.Minute); err != nil || n != int64(i) {
					t.Fatalf("Incr during failure %d = %d, %v: want the fallback's count", i, n, err)
				}
			}
			if !s.Degraded() {
				t.Fatalf("still closed after %d failures", tc.opensAfter)
			}
			before := primary.calls.Load()
			for i := tc.opensAfter + 1; i <= 10; i++ {
				if n, err := s.Incr(ctx, "k", time.Minute); err != nil || n != int64(i) {
					t.Fatalf("Incr while open = %d, %v; want %d from the fallback", n, err, i)
				}
			}
			if _, err := s.Get(ctx, "missing"); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("Get while open: %v", err)
			}
			if n := primary.calls.Load() - before; n != 0 {
				t.Fatalf("%d calls reached the primary while the breaker was open", n)
			}
			if err := s.Ping(ctx); !errors.Is(err, failover.ErrFallback) {
				t.Fatalf("Ping while open = %v", err)
			}
			if got := ch.get(); len(got) != 1 || !got[0] {
				t.Fatalf("state changes %v, want one opening", got)
			}
		})
	}
}

// TestProbesWithBackoffThenCloses: an open breaker probes once per back-off
// (500 ms doubling up to 10 s), never twice at once however many calls come,
// and closes when a probe succeeds: calls go to the primary again, and the
// fallback's counts are gone.
func TestProbesWithBackoffThenCloses(t *testing.T) {
	ctx := context.Background()
	primary := newFlaky()
	s, clk, ch := newBreaker(t, primary, failover.Options{})
	primary.setFail(errRefused)
	s.Incr(ctx, "k", time.Minute)
	if !s.Degraded() {
		t.Fatal("a refused connection did not open the breaker")
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		for range 20 { // traffic while open starts no probe of its own
			s.Incr(ctx, "k", time.Minute)
		}
		if d := clk.nextWait(t); d != w {
			t.Fatalf("back-off %d = %v, want %v", i+1, d, w)
		}
		if i == len(want)-1 {
			primary.setFail(nil)
		}
		clk.Advance(w)
		err := primary.waitPing(t)
		if (err == nil) != (i == len(want)-1) {
			t.Fatalf("probe %d: %v", i+1, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Degraded() {
		if time.Now().After(deadline) {
			t.Fatal("a successful probe did not close the breaker")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case d := <-clk.asked:
		t.Fatalf("a closed breaker still waits to probe (%v)", d)
	case p := <-primary.pinged:
		t.Fatalf("more than one probe at a time: %v", p)
	default:
	}
	before := primary.calls.Load()
	if n, err := s.Incr(ctx, "k", time.Minute); err != nil || n != 1 {
		t.Fatalf("Incr after recovery = %d, %v; want 1 from the primary", n, err)
	}
	if primary.calls.Load() != before+1 {
		t.Fatal("the call after recovery did not reach the primary")
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ch.get(); len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("state changes %v, want open then closed", got)
	}
	// A second outage starts with an empty fallback.
	primary.setFail(errRefused)
	if n, _ := s.Incr(ctx, "k", time.Minute); n != 1 {
		t.Fatalf("the fallback kept the last outage's count: %d", n)
	}
}

// TestStartOpen: a primary that did not answer at start is probed in the
// background, and the breaker closes when it answers.
func TestStartOpen(t *testing.T) {
	primary := newFlaky()
	primary.setFail(errRefused)
	s, clk, ch := newBreaker(t, primary, failover.Options{StartOpen: true})
	if !s.Degraded() {
		t.Fatal("StartOpen: not open")
	}
	if n, err := s.Incr(context.Background(), "k", time.Minute); err != nil || n != 1 || primary.calls.Load() != 0 {
		t.Fatalf("Incr = %d, %v with %d primary calls", n, err, primary.calls.Load())
	}
	primary.setFail(nil)
	clk.Advance(clk.nextWait(t))
	if err := primary.waitPing(t); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Degraded() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.Degraded() {
		t.Fatal("not closed after a successful probe")
	}
	if got := ch.get(); len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("state changes %v", got)
	}
}

// TestCallerCancelIsNoFailure: a call whose caller gave up says nothing of
// the primary.
func TestCallerCancelIsNoFailure(t *testing.T) {
	primary := newFlaky()
	s, _, _ := newBreaker(t, primary, failover.Options{Failures: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	primary.setFail(context.Canceled)
	s.Incr(ctx, "k", time.Minute)
	if s.Degraded() {
		t.Fatal("a cancelled call opened the breaker")
	}
}

// TestFallbackSetIsBounded: while open, values Set beyond SetBytes are not
// kept (as if expired), so an outage cannot grow the process without bound.
func TestFallbackSetIsBounded(t *testing.T) {
	ctx := context.Background()
	primary := newFlaky()
	primary.setFail(errRefused)
	s, _, _ := newBreaker(t, primary, failover.Options{StartOpen: true, SetBytes: 10})
	if err := s.Set(ctx, "a", []byte("12345678"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "b", []byte("12345678"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a"); err != nil || string(v) != "12345678" {
		t.Fatalf("Get(a) = %q, %v", v, err)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(b) past the bound: %v, want ErrNotFound", err)
	}
}
