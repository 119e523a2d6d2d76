// Package follow keeps an in-memory snapshot (a search index, a recognition
// index) in step with a store: it polls the store's version and rebuilds (or,
// given Update, updates) the snapshot when the version moves, so a write by
// another process or replica is served everywhere within one poll interval,
// without a restart; given Watch, within milliseconds.
package follow

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Source is a versioned store and how to build a snapshot of it.
type Source[T any] struct {
	// Name says what is built, in logs ("search index").
	Name string
	// Version changes whenever the store does.
	Version func(ctx context.Context) (int64, error)
	// Build makes a snapshot of the store.
	Build func(ctx context.Context) (*T, error)
	// Update, when set, brings the current snapshot, taken at version since,
	// up to date (applying what changed rather than building anew) and returns
	// the version the new one holds. Build still makes the first snapshot.
	Update func(ctx context.Context, current *T, since int64) (*T, int64, error)
	// Watch, when set, tells of changes as they happen: it runs until ctx
	// ends, calling changed once it watches and whenever the store may have
	// changed since (a notification, or a check cheap enough to run far more
	// often than the poll), and returns why it stopped; it is started again
	// after a pause. The snapshot then follows within milliseconds of a
	// write. While it watches, the poll runs only every WatchedPoll, for
	// what a watch might miss; while it is down, at the interval given.
	Watch func(ctx context.Context, changed func()) error
}

// rewatch is the pause before a failed Watch is started again.
const rewatch = time.Second

// WatchedPoll is the poll's interval while a Watch watches. Every poll wakes
// an idle server: at 250 ms, two followed stores were most of the CPU an
// idle server spent.
const WatchedPoll = 10 * time.Second

// Value is the current snapshot of a followed source.
type Value[T any] struct {
	src     Source[T]
	log     zerolog.Logger
	current atomic.Pointer[T]
	mu      sync.Mutex // one rebuild at a time
	version int64
	// watching: the source's Watch has told it watches and not stopped.
	watching atomic.Bool
}

// Start builds the first snapshot and follows the source every interval until
// ctx ends.
func Start[T any](ctx context.Context, src Source[T], every time.Duration, log zerolog.Logger) (*Value[T], error) {
	v := &Value[T]{src: src, log: log, version: -1}
	if err := v.Refresh(ctx); err != nil {
		return nil, err
	}
	// changed wakes the loop below; changes told while it refreshes make
	// one more refresh.
	changed := make(chan struct{}, 1)
	if src.Watch != nil {
		go v.watch(ctx, changed)
	}
	go func() {
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-changed:
			}
			if err := v.Refresh(ctx); err != nil && ctx.Err() == nil {
				v.log.Warn().Err(err).Msg("refresh the " + src.Name)
			}
			next := every
			if v.watching.Load() {
				next = max(every, WatchedPoll)
			}
			t.Reset(next)
		}
	}()
	return v, nil
}

// watch runs the source's Watch until ctx ends, again after a pause when it
// fails, waking the refresh loop through changed.
func (v *Value[T]) watch(ctx context.Context, changed chan<- struct{}) {
	wake := func() {
		select {
		case changed <- struct{}{}:
		default: // a refresh is due already
		}
	}
	watching := func() {
		v.watching.Store(true)
		wake()
	}
	for {
		err := v.src.Watch(ctx, watching)
		// Polled at the full rate until it watches again; woken now, as the
		// poll may be seconds away.
		v.watching.Store(false)
		wake()
		if ctx.Err() != nil {
			return
		}
		v.log.Warn().Err(err).Msg("watch for changes to the " + v.src.Name + " (polling meanwhile)")
		select {
		case <-ctx.Done():
			return
		case <-time.After(rewatch):
		}
	}
}

// Get returns the current snapshot.
func (v *Value[T]) Get() *T { return v.current.Load() }

// Refresh rebuilds or updates the snapshot if the source changed since.
func (v *Value[T]) Refresh(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	ver, err := v.src.Version(ctx)
	if err != nil {
		return fmt.Errorf("%s version: %w", v.src.Name, err)
	}
	if ver == v.version {
		return nil
	}
	start := time.Now()
	if cur := v.current.Load(); cur != nil && v.src.Update != nil {
		snap, at, err := v.src.Update(ctx, cur, v.version)
		if err != nil {
			return fmt.Errorf("update the %s: %w", v.src.Name, err)
		}
		v.current.Store(snap)
		v.version = at
		v.log.Debug().Dur("took", time.Since(start)).Int64("version", at).Msg(v.src.Name + " updated")
		return nil
	}
	snap, err := v.src.Build(ctx)
	if err != nil {
		return fmt.Errorf("build the %s: %w", v.src.Name, err)
	}
	v.current.Store(snap)
	v.version = ver
	v.log.Debug().Dur("took", time.Since(start)).Int64("version", ver).Msg(v.src.Name + " built")
	return nil
}

// Swap replaces the current snapshot with fn's, in turn with refreshes: fn
// gets the current snapshot and its version and returns the new one's (say,
// one made in the background from an older snapshot, brought up to date).
func (v *Value[T]) Swap(ctx context.Context, fn func(ctx context.Context, current *T, version int64) (*T, int64, error)) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	snap, at, err := fn(ctx, v.current.Load(), v.version)
	if err != nil {
		return err
	}
	v.current.Store(snap)
	v.version = at
	return nil
}
