package imagefetch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// DefaultCapacityWait is how long a request's images wait for the decode
// budget while none of them holds a share of it (see Config.CapacityWait).
const DefaultCapacityWait = 5 * time.Second

// CodeOverCapacity: the decode budget stayed full for CapacityWait. It is
// the server's state, not the image's: the request may be sent again, after
// Error.RetryAfter.
const CodeOverCapacity = "over_capacity"

// errOverCapacity is the cause an admission's waits are canceled with.
var errOverCapacity = errors.New("over capacity")

// overCapacity is the refusal of a request that found the budget full.
func (f *Fetcher) overCapacity() *Error {
	after := f.retryAfter()
	return &Error{Code: CodeOverCapacity, RetryAfter: after,
		Message: fmt.Sprintf("the server is busy with other requests' images and had no room for this one within %s: nothing was charged; retry in %d s", f.cfg.CapacityWait, int64(after/time.Second))}
}

// retryAfter is what a request over capacity is told to wait: the capacity
// wait in whole seconds, at least one. Room comes back as other requests'
// images are done with; their work takes seconds, not minutes.
func (f *Fetcher) retryAfter() time.Duration {
	return time.Duration(max(1, math.Ceil(f.cfg.CapacityWait.Seconds()))) * time.Second
}

// admission is one request's wait for the decode budget. Its images wait at
// most wait while none of them holds a share; while one does, the others
// wait for it without a limit: the request is making progress, and its own
// images may be all the budget holds (eight large photos of one request
// need not fit at once). Without this, a request alone on the server could
// be sent away by its own images.
type admission struct {
	wait time.Duration
	// ctx is the images' waits' context: the request's, canceled with
	// errOverCapacity when the clock runs out.
	ctx  context.Context
	stop context.CancelCauseFunc

	mu            sync.Mutex
	held, waiting int  // the request's images holding a share; waiting for one
	running       bool // the clock runs: images wait and none holds a share
	gen           int  // counts the clock's starts and stops: a stale timer does nothing
	timer         *time.Timer
}

// admit begins a request's admission; done ends it (after its images are
// released).
func (f *Fetcher) admit(ctx context.Context) (a *admission, done func()) {
	a = &admission{wait: f.cfg.CapacityWait}
	a.ctx, a.stop = context.WithCancelCause(ctx)
	return a, func() { a.stop(nil) }
}

// acquire takes n bytes of f's budget for one of the request's images (ctx
// is the image's, under the context admit was given). It fails with ctx's
// error when it ends, or with errOverCapacity when the request's clock runs
// out.
func (a *admission) acquire(ctx context.Context, f *Fetcher, n int64) error {
	if a == nil { // not a request's (Decode): wait as long as ctx lets it
		return f.budget.Acquire(ctx, n)
	}
	if f.budget.TryAcquire(n) {
		a.change(1, 0)
		return nil
	}
	a.change(0, 1)
	err := f.budget.Acquire(a.ctx, n)
	if err == nil {
		a.change(1, -1)
		return nil
	}
	a.change(0, -1)
	// The caller's end first (it went away, or a sibling image failed and
	// FetchEach gave up): that is not the server being busy.
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cause := context.Cause(a.ctx); errors.Is(cause, errOverCapacity) {
		return errOverCapacity
	}
	return err
}

// release records that one of the request's images gave its share back.
func (a *admission) release() {
	if a != nil {
		a.change(-1, 0)
	}
}

// change adds to the images holding and waiting, and starts or stops the
// clock.
func (a *admission) change(held, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held += held
	a.waiting += waiting
	run := a.waiting > 0 && a.held == 0
	if run == a.running {
		return
	}
	a.running = run
	a.gen++
	if a.timer != nil {
		a.timer.Stop()
	}
	if !run {
		return
	}
	gen := a.gen
	a.timer = time.AfterFunc(a.wait, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.gen == gen {
			a.stop(errOverCapacity)
		}
	})
}
