package sqldbtest

import (
	"context"
	"testing"
	"time"
)

// Watched is a store's watch (sqldb.DB.Watch, or a store's Watch over it)
// running for a test, which checks what it tells.
type Watched struct {
	t       testing.TB
	told    chan struct{}
	stopped chan error
}

// Soon is how long a watch may take to tell of a write on a busy machine;
// milliseconds when quiet.
const Soon = 10 * time.Second

// StartWatch runs watch until ctx ends.
func StartWatch(t testing.TB, ctx context.Context, watch func(ctx context.Context, changed func()) error) *Watched {
	w := &Watched{t: t, told: make(chan struct{}, 100), stopped: make(chan error, 1)}
	go func() { w.stopped <- watch(ctx, func() { w.told <- struct{}{} }) }()
	return w
}

// Told fails the test unless the watch tells (of what) within Soon.
func (w *Watched) Told(what string) {
	w.t.Helper()
	select {
	case <-w.told:
	case err := <-w.stopped:
		w.t.Fatalf("%s: the watch stopped: %v", what, err)
	case <-time.After(Soon):
		w.t.Fatalf("%s: not told within %s", what, Soon)
	}
}

// Quiet fails the test if the watch tells of anything for d (of what should
// tell nothing).
func (w *Watched) Quiet(what string, d time.Duration) {
	w.t.Helper()
	select {
	case <-w.told:
		w.t.Fatalf("told of %s", what)
	case <-time.After(d):
	}
}

// Stopped waits, at most Soon, for the watch to end and returns why.
func (w *Watched) Stopped() error {
	w.t.Helper()
	select {
	case err := <-w.stopped:
		return err
	case <-time.After(Soon):
		w.t.Fatal("the watch went on")
		return nil
	}
}
