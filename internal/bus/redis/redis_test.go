package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/bus"
	busredis "github.com/vitolahq/vitola/internal/bus/redis"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	kvredis "github.com/vitolahq/vitola/internal/kv/redis"
)

func open(t *testing.T, url, prefix string) *busredis.Bus {
	t.Helper()
	b, err := busredis.Open(context.Background(), url, prefix, 0)
	if err != nil {
		t.Fatalf("Redis unreachable: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// A bus opened while Redis is down works once Redis is up.
func TestOpenBeforeRedis(t *testing.T) {
	srv := kvtest.NewRedisServer(t, 0)
	b, err := busredis.Open(context.Background(), srv.URL(), kvtest.Prefix("bus"), 0)
	if !errors.Is(err, busredis.ErrUnreachable) || b == nil {
		t.Fatalf("Open with Redis down: %v, %v; want a bus and ErrUnreachable", b, err)
	}
	defer b.Close()
	s := b.Subscribe("t")
	srv.Start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b.Publish(context.Background(), "t", []byte("up"))
		select {
		case p := <-s.Events():
			if string(p) != "up" {
				t.Fatalf("got %q", p)
			}
			return
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the bus did not listen within 15 s of Redis starting")
		}
	}
}

func recv(t *testing.T, s *bus.Subscription) string {
	t.Helper()
	select {
	case p, ok := <-s.Events():
		if !ok {
			t.Fatalf("stream ended: %v", s.Err())
		}
		return string(p)
	case <-time.After(3 * time.Second):
		t.Fatal("no event within 3 s")
	}
	return ""
}

// Two replicas' buses on one real Redis (VITOLA_TEST_REDIS_URL): an event
// published through either reaches the subscribers of both; another prefix
// (another deployment) hears nothing.
func TestAcrossReplicas(t *testing.T) {
	url := kvtest.RedisURL(t)
	prefix := kvtest.Prefix("bus")
	one, two, stranger := open(t, url, prefix), open(t, url, prefix), open(t, url, kvtest.Prefix("bus"))
	s1, s2, s3 := one.Subscribe("sessions"), two.Subscribe("sessions"), stranger.Subscribe("sessions")
	if err := one.Publish(context.Background(), "sessions", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if recv(t, s1) != `{"n":1}` || recv(t, s2) != `{"n":1}` {
		t.Fatal("a replica missed the event")
	}
	two.Publish(context.Background(), "sessions", []byte(`{"n":2}`))
	if recv(t, s1) != `{"n":2}` || recv(t, s2) != `{"n":2}` {
		t.Fatal("a replica missed the second event")
	}
	select {
	case p := <-s3.Events():
		t.Fatalf("another prefix received %s", p)
	case <-time.After(200 * time.Millisecond):
	}
	if st := one.Stats(); st.Published != 1 || st.Delivered != 2 {
		t.Fatalf("stats %+v", st)
	}
	// An idle listener outlives the client's read timeout: the subscriber
	// connection reads without a deadline.
	time.Sleep(2 * kvredis.ReadTimeout)
	one.Publish(context.Background(), "sessions", []byte(`{"n":3}`))
	if recv(t, s2) != `{"n":3}` {
		t.Fatal("the idle replica missed the event")
	}
}

// With Redis gone, Publish fails fast (bounded, counted) rather than stalling
// its caller; when Redis is back, the listener resubscribes by itself.
func TestRedisOutage(t *testing.T) {
	srv := kvtest.StartRedisServer(t)
	prefix := kvtest.Prefix("bus")
	pub, sub := open(t, srv.URL(), prefix), open(t, srv.URL(), prefix)
	s := sub.Subscribe("t")
	srv.Kill()
	start := time.Now()
	err := pub.Publish(context.Background(), "t", []byte("lost"))
	if err == nil {
		t.Fatal("Publish with Redis down: no error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Publish with Redis down took %s", d)
	}
	if st := pub.Stats(); st.PublishFailed != 1 {
		t.Fatalf("stats %+v, want one failed publication", st)
	}
	srv.Start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pub.Publish(context.Background(), "t", []byte("back"))
		select {
		case p := <-s.Events():
			if string(p) != "back" {
				t.Fatalf("got %q", p)
			}
			return
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not come back with Redis within 15 s")
		}
	}
}
