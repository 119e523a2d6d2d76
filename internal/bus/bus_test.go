package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/bus"
)

func recv(t *testing.T, s *bus.Subscription) string {
	t.Helper()
	select {
	case p, ok := <-s.Events():
		if !ok {
			t.Fatalf("stream ended: %v", s.Err())
		}
		return string(p)
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2 s")
	}
	return ""
}

func TestLocalFanOut(t *testing.T) {
	ctx := context.Background()
	b := bus.NewLocal(4)
	a1, a2, other := b.Subscribe("a"), b.Subscribe("a"), b.Subscribe("b")
	if err := b.Publish(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if recv(t, a1) != "1" || recv(t, a2) != "1" {
		t.Fatal("a subscriber of the topic missed the event")
	}
	select {
	case p := <-other.Events():
		t.Fatalf("another topic's subscriber got %q", p)
	default:
	}
	a2.Close()
	if _, ok := <-a2.Events(); ok || a2.Err() != nil {
		t.Fatalf("closed stream: open or err %v", a2.Err())
	}
	b.Publish(ctx, "a", []byte("2"))
	if recv(t, a1) != "2" {
		t.Fatal("the remaining subscriber missed the event")
	}
	if st := b.Stats(); st.Published != 2 || st.Delivered != 3 || st.Subscribers != 2 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A subscriber that does not read is dropped when its buffer is full, with a
// reason; publishing never blocks on it, and others keep receiving.
func TestLocalDropsSlowConsumer(t *testing.T) {
	ctx := context.Background()
	b := bus.NewLocal(2)
	slow, fast := b.Subscribe("a"), b.Subscribe("a")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			b.Publish(ctx, "a", []byte{byte('0' + i)})
			if got := recv(t, fast); got != string(rune('0'+i)) {
				t.Errorf("fast got %q", got)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Publish blocked on a slow subscriber")
	}
	n := 0
	for range slow.Events() {
		n++
	}
	if n != 2 || !errors.Is(slow.Err(), bus.ErrSlowConsumer) {
		t.Fatalf("slow subscriber: %d events buffered, err %v; want 2 and ErrSlowConsumer", n, slow.Err())
	}
	if st := b.Stats(); st.Dropped != 1 || st.Subscribers != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLocalClose(t *testing.T) {
	b := bus.NewLocal(0)
	s := b.Subscribe("a")
	b.Close()
	if _, ok := <-s.Events(); ok || !errors.Is(s.Err(), bus.ErrClosed) {
		t.Fatalf("after Close: open or err %v", s.Err())
	}
	if late := b.Subscribe("a"); !errors.Is(late.Err(), bus.ErrClosed) {
		t.Fatalf("subscribe after Close: err %v", late.Err())
	}
}
