// Package kvtest is the contract every kv.Store passes. Backends call Run from
// their own tests.
package kvtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
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

// RunSpend checks Spend's token bucket: the whole quota at once, then refusal
// with the wait until the units are there, a refill at the rate, costs above
// one, and a cost the bucket can never hold.
func RunSpend(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	// A unit per 500 ms: wide margins for a real server's clock on a busy machine.
	b := kv.Bucket{Limit: 4, Period: 2 * time.Second}
	for i := int64(1); i <= 4; i++ {
		sp, err := s.Spend(ctx, "k", b, 1)
		if err != nil || !sp.OK || sp.Remaining != 4-i {
			t.Fatalf("spend #%d = %+v, %v; want OK with %d left", i, sp, err, 4-i)
		}
	}
	sp, err := s.Spend(ctx, "k", b, 1)
	if err != nil || sp.OK || sp.Remaining != 0 {
		t.Fatalf("fifth spend = %+v, %v; want refused with 0 left", sp, err)
	}
	if sp.RetryAfter <= 0 || sp.RetryAfter > 500*time.Millisecond {
		t.Fatalf("RetryAfter = %v, want (0, 500ms]", sp.RetryAfter)
	}
	if sp.Reset <= 1500*time.Millisecond || sp.Reset > 2*time.Second {
		t.Fatalf("Reset = %v, want (1.5s, 2s]", sp.Reset)
	}
	if sp, _ := s.Spend(ctx, "other", b, 1); !sp.OK {
		t.Fatal("another key was limited")
	}
	h.Advance(1250 * time.Millisecond) // two units back, not three
	if sp, _ := s.Spend(ctx, "k", b, 3); sp.OK {
		t.Fatalf("spent 3 units after 1.25 s: %+v", sp)
	}
	if sp, _ := s.Spend(ctx, "k", b, 2); !sp.OK || sp.Remaining != 0 {
		t.Fatalf("spend of 2 after 1.25 s = %+v, want OK with 0 left", sp)
	}
	if sp, _ := s.Spend(ctx, "k", b, 5); sp.OK || sp.RetryAfter != 0 {
		t.Fatalf("a cost above the limit = %+v, want refused with no RetryAfter", sp)
	}
	h.Advance(2100 * time.Millisecond)
	if sp, _ := s.Spend(ctx, "k", b, 4); !sp.OK || sp.Remaining != 0 {
		t.Fatalf("full bucket after the period: spend 4 = %+v", sp)
	}
}

// RunSpendConcurrent checks that concurrent spends never draw more than the
// bucket holds.
func RunSpendConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	b := kv.Bucket{Limit: 20, Period: time.Hour}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp, err := s.Spend(ctx, "c", b, 1)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			if sp.OK {
				ok++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ok != 20 {
		t.Fatalf("%d of 50 concurrent spends passed, want exactly 20", ok)
	}
}

// RedisURL is the test Redis server's URL (VITOLA_TEST_REDIS_URL). Without it
// the test skips, or fails with VITOLA_TEST_REQUIRE_SERVICES=1 (CI), where
// nothing may skip for want of a service.
func RedisURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("VITOLA_TEST_REDIS_URL")
	if url == "" {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1 but VITOLA_TEST_REDIS_URL is not set")
		}
		t.Skip("missing Redis: set VITOLA_TEST_REDIS_URL=redis://127.0.0.1:6379/0 to run this test")
	}
	return url
}

// Prefix is a Redis key prefix of the caller's own, "vitola-test:NAME:RANDOM:",
// so that tests and packages sharing one server never meet.
func Prefix(name string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "vitola-test:" + name + ":" + hex.EncodeToString(b) + ":"
}

// RedisServer is a redis-server process of the test's own, on loopback: a
// test may kill it and start it again on the same port, which the shared
// server of VITOLA_TEST_REDIS_URL must never be.
type RedisServer struct {
	t    testing.TB
	Addr string // 127.0.0.1:PORT
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// RedisServerBinary is where the machines and CI have redis-server.
const RedisServerBinary = "/usr/bin/redis-server"

// NewRedisServer prepares a server on port (0: a free one) without starting
// it. Without redis-server the test skips, or fails with
// VITOLA_TEST_REQUIRE_SERVICES=1 (CI).
func NewRedisServer(t testing.TB, port int) *RedisServer {
	t.Helper()
	bin := RedisServerBinary
	if _, err := os.Stat(bin); err != nil {
		if p, err := exec.LookPath("redis-server"); err == nil {
			bin = p
		} else if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("VITOLA_TEST_REQUIRE_SERVICES=1 but there is no redis-server (%s): apt-get install redis-server", RedisServerBinary)
		} else {
			t.Skipf("missing redis-server (%s): apt-get install redis-server to run this test", RedisServerBinary)
		}
	}
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	s := &RedisServer{t: t, Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: t.TempDir()}
	s.cmd = exec.Command(bin) // the binary; Start makes each process
	t.Cleanup(s.Kill)
	return s
}

// StartRedisServer is NewRedisServer, started.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	s := NewRedisServer(t, 0)
	s.Start()
	return s
}

// URL is the server's redis:// URL.
func (s *RedisServer) URL() string { return "redis://" + s.Addr + "/0" }

// Start runs the server (nothing saved to disk) and waits until it answers
// PING.
func (s *RedisServer) Start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	s.cmd = exec.Command(s.cmd.Path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "warning")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("PING\r\n"))
			b := make([]byte, 7)
			n, _ := c.Read(b)
			c.Close()
			if string(b[:n]) == "+PONG\r\n" {
				return
			}
		}
		select {
		case <-s.done:
			s.t.Fatalf("redis-server on %s exited at start (port taken?)", s.Addr)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer within 20 s", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *RedisServer) Kill() {
	if s.done == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.done = nil
}
