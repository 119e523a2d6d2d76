package follow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/follow"
)

func TestFollowRebuildsWhenTheVersionMoves(t *testing.T) {
	var version, builds atomic.Int64
	var fail atomic.Bool
	src := follow.Source[int64]{
		Name:    "test snapshot",
		Version: func(context.Context) (int64, error) { return version.Load(), nil },
		Build: func(context.Context) (*int64, error) {
			if fail.Load() {
				return nil, errors.New("store down")
			}
			builds.Add(1)
			v := version.Load()
			return &v, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := follow.Start(ctx, src, 10*time.Millisecond, zerolog.Nop())
	if err != nil || *v.Get() != 0 {
		t.Fatalf("first snapshot: %v %v", v.Get(), err)
	}
	time.Sleep(50 * time.Millisecond)
	if builds.Load() != 1 {
		t.Fatalf("%d builds without a change, want 1", builds.Load())
	}
	version.Store(7)
	deadline := time.Now().Add(10 * time.Second) // milliseconds when quiet
	for *v.Get() != 7 {
		if time.Now().After(deadline) {
			t.Fatal("the snapshot did not follow the version within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A failed build keeps serving the last good snapshot.
	fail.Store(true)
	version.Store(8)
	if err := v.Refresh(ctx); err == nil || *v.Get() != 7 {
		t.Fatalf("failed rebuild: %v, snapshot %d", err, *v.Get())
	}
}

// TestFollowUpdates: given Update, the first snapshot is built and later ones
// are updated from the current one and the version it holds, which Update
// returns; Swap replaces the snapshot in turn with refreshes.
func TestFollowUpdates(t *testing.T) {
	var version, builds atomic.Int64
	type call struct{ from, since int64 }
	var calls []call
	src := follow.Source[int64]{
		Name:    "test snapshot",
		Version: func(context.Context) (int64, error) { return version.Load(), nil },
		Build: func(context.Context) (*int64, error) {
			builds.Add(1)
			v := version.Load() * 10
			return &v, nil
		},
		Update: func(_ context.Context, cur *int64, since int64) (*int64, int64, error) {
			calls = append(calls, call{*cur, since})
			v := version.Load()
			next := v * 10
			return &next, v, nil
		},
	}
	ctx := context.Background()
	v, err := follow.Start(ctx, src, time.Hour, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []int64{3, 3, 5} {
		version.Store(to)
		if err := v.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if builds.Load() != 1 || len(calls) != 2 || calls[0] != (call{0, 0}) || calls[1] != (call{30, 3}) || *v.Get() != 50 {
		t.Fatalf("builds %d, updates %v, snapshot %d; want 1 build, updates from (0 at 0) and (30 at 3), 50", builds.Load(), calls, *v.Get())
	}
	if err := v.Swap(ctx, func(_ context.Context, cur *int64, at int64) (*int64, int64, error) {
		if *cur != 50 || at != 5 {
			t.Errorf("swap got %d at %d, want 50 at 5", *cur, at)
		}
		next := int64(51)
		return &next, 5, nil
	}); err != nil || *v.Get() != 51 {
		t.Fatalf("after swap: %d, %v", *v.Get(), err)
	}
}

// TestFollowWatches: given Watch, a change it tells of is followed at once,
// not at the next poll (an hour here); a Watch that fails is started again.
func TestFollowWatches(t *testing.T) {
	var version, watches atomic.Int64
	tell := make(chan func(), 1)
	src := follow.Source[int64]{
		Name:    "test snapshot",
		Version: func(context.Context) (int64, error) { return version.Load(), nil },
		Build: func(context.Context) (*int64, error) {
			v := version.Load()
			return &v, nil
		},
		Watch: func(ctx context.Context, changed func()) error {
			if watches.Add(1) == 1 {
				return errors.New("connection refused")
			}
			tell <- changed
			<-ctx.Done()
			return ctx.Err()
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := follow.Start(ctx, src, time.Hour, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var changed func()
	select {
	case changed = <-tell:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed watch was not started again within 10 s")
	}
	for to := int64(1); to <= 3; to++ {
		version.Store(to)
		changed()
		deadline := time.Now().Add(10 * time.Second) // milliseconds when quiet
		for *v.Get() != to {
			if time.Now().After(deadline) {
				t.Fatalf("the snapshot did not follow a change told to version %d within 10 s", to)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestFollowPollsSlowlyWhileWatched: while the source's Watch watches, the
// poll (5 ms here) runs only every WatchedPoll, as each wakes an idle server;
// when the watch stops, the poll is back at its own interval at once.
func TestFollowPollsSlowlyWhileWatched(t *testing.T) {
	var polls atomic.Int64
	stopWatch := make(chan struct{})
	src := follow.Source[int64]{
		Name:    "test snapshot",
		Version: func(context.Context) (int64, error) { polls.Add(1); return 1, nil },
		Build:   func(context.Context) (*int64, error) { v := int64(1); return &v, nil },
		Watch: func(ctx context.Context, changed func()) error {
			changed()
			select {
			case <-stopWatch:
				return errors.New("connection lost")
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := follow.Start(ctx, src, 5*time.Millisecond, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	// The first build, the refresh the watch asks for, perhaps one poll
	// before it watched: never the sixty of a 5 ms poll.
	if n := polls.Load(); n > 5 {
		t.Fatalf("%d version reads in 300 ms while watched; want at most 5", n)
	}
	close(stopWatch)
	before := polls.Load()
	for deadline := time.Now().Add(10 * time.Second); polls.Load() < before+10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the poll did not resume within 10 s of the watch stopping (%d reads)", polls.Load()-before)
		}
	}
}
