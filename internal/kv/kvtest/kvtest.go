// Package kvtest is the contract every kv.Store passes. Backends call Run from
// their own tests.
package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/kv"
)

// Harness gives the suite a fresh store and a way to let time pass: a fake clock
// advances, a real server sleeps.
type Harness struct {
	New     func(t *testing.T) kv.Store
	Advance func(d time.Duration)
}

// Run runs the contract.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	t.Run("GetMissing", func(t *testing.T) {
		s := h.New(t)
		if _, err := s.Get(ctx, "missing"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get(missing) err = %v, want ErrNotFound", err)
		}
	})
	t.Run("SetGetExpire", func(t *testing.T) {
		s := h.New(t)
		if err := s.Set(ctx, "a", []byte("1"), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		v, err := s.Get(ctx, "a")
		if err != nil || string(v) != "1" {
			t.Fatalf("Get(a) = %q, %v", v, err)
		}
		h.Advance(400 * time.Millisecond)
		if _, err := s.Get(ctx, "a"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("after ttl: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("SetNXIsALock", func(t *testing.T) {
		s := h.New(t)
		ok, err := s.SetNX(ctx, "lock", []byte("owner1"), 200*time.Millisecond)
		if err != nil || !ok {
			t.Fatalf("first SetNX = %v, %v", ok, err)
		}
		if ok, _ := s.SetNX(ctx, "lock", []byte("owner2"), time.Second); ok {
			t.Fatal("second SetNX took a held lock")
		}
		if ok, _ := s.DeleteIfEqual(ctx, "lock", []byte("owner2")); ok {
			t.Fatal("DeleteIfEqual released another owner's lock")
		}
		h.Advance(400 * time.Millisecond)
		if ok, _ := s.SetNX(ctx, "lock", []byte("owner2"), time.Second); !ok {
			t.Fatal("lock not free after its ttl")
		}
		if ok, _ := s.DeleteIfEqual(ctx, "lock", []byte("owner2")); !ok {
			t.Fatal("owner could not release its lock")
		}
		if _, err := s.Get(ctx, "lock"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatal("released lock still present")
		}
	})
	t.Run("Delete", func(t *testing.T) {
		s := h.New(t)
		s.Set(ctx, "d", []byte("x"), time.Minute)
		if err := s.Delete(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "never-there"); err != nil {
			t.Fatalf("Delete(missing) = %v", err)
		}
		if _, err := s.Get(ctx, "d"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatal("deleted key still present")
		}
	})
	t.Run("IncrWindow", func(t *testing.T) {
		s := h.New(t)
		for i := int64(1); i <= 3; i++ {
			n, err := s.Incr(ctx, "rate", 200*time.Millisecond)
			if err != nil || n != i {
				t.Fatalf("Incr #%d = %d, %v", i, n, err)
			}
		}
		h.Advance(400 * time.Millisecond)
		if n, _ := s.Incr(ctx, "rate", 200*time.Millisecond); n != 1 {
			t.Fatalf("counter after window = %d, want 1", n)
		}
	})
	t.Run("ConcurrentIncrCountsEveryCall", func(t *testing.T) {
		s := h.New(t)
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Incr(ctx, "c", time.Minute); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		v, _ := s.Get(ctx, "c")
		if string(v) != fmt.Sprint(50) {
			t.Fatalf("counter = %s, want 50", v)
		}
	})
	t.Run("Ping", func(t *testing.T) {
		if err := h.New(t).Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// RunLimiter checks a Limiter over a store: Max events pass, the next is refused,
// keys are counted apart, and the window resets.
func RunLimiter(t *testing.T, h Harness) {
	ctx := context.Background()
	l := &kv.Limiter{Store: h.New(t), Prefix: "login:", Max: 3, Window: 200 * time.Millisecond}
	for i := range 3 {
		if !l.Allow(ctx, "a") {
			t.Fatalf("event %d refused", i+1)
		}
	}
	if l.Allow(ctx, "a") {
		t.Fatal("the fourth event passed")
	}
	if !l.Allow(ctx, "b") {
		t.Fatal("another key was limited")
	}
	h.Advance(400 * time.Millisecond)
	if !l.Allow(ctx, "a") {
		t.Fatal("the window did not reset")
	}
}
