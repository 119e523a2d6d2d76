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
	deadline := time.Now().Add(time.Second)
	for *v.Get() != 7 {
		if time.Now().After(deadline) {
			t.Fatal("the snapshot did not follow the version within a second")
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
