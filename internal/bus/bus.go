// Package bus carries live events (a smoke session started, a token revoked)
// from the replica that wrote them to the subscription streams open on every
// replica. Publish sends an event on a topic; Subscribe opens a stream of a
// topic's events with a bounded buffer of its own.
//
// Two implementations: Local, in process (the embedded default: one process
// writes and serves every stream), and bus/redis, Redis pub/sub, when
// REDIS_URL is set (scale-out: every replica receives every event and fans it
// out in process through a Hub).
//
// Why Redis pub/sub rather than PostgreSQL LISTEN/NOTIFY (internal/sqldb has
// both halves): the scale-out shape already needs Redis (rate limits, leases),
// the embedded default runs on SQLite, which has no notifications, so NOTIFY
// would still need a second path; a NOTIFY payload is capped at 8000 bytes and
// every notifying commit takes a database-wide lock, which serializes the
// write path we want fast; and each replica would hold a pooled database
// connection for LISTEN. What NOTIFY gives and pub/sub does not is delivery
// tied to the commit. We publish right after the commit instead, with a short
// timeout: a Redis that is down or slow loses the event (counted in Stats and
// logged by the caller) but never fails or stalls the write, and the
// subscriber misses a live event it can still read from the feed. Events are
// at most once: pub/sub keeps nothing for a replica that is not listening.
package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Bus publishes events and opens streams of them.
type Bus interface {
	// Publish sends payload to every subscriber of topic, on every replica.
	// It returns once the event is handed on, never waiting on a subscriber.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe opens a stream of topic's events published from now on.
	Subscribe(topic string) *Subscription
	// Stats counts what the bus did since it started.
	Stats() Stats
	// Close ends every open stream (ErrClosed) and releases the bus.
	Close() error
}

// Stats are a bus's counters since it started.
type Stats struct {
	// Published counts events handed on; PublishFailed those lost on the way
	// (Redis down or slow).
	Published, PublishFailed int64
	// Delivered counts events put in a subscriber's buffer; Dropped counts
	// subscribers ended because their buffer was full (slow consumers).
	Delivered, Dropped int64
	// Subscribers is how many streams are open now.
	Subscribers int64
}

// Why a stream ended, from Subscription.Err.
var (
	// ErrSlowConsumer: the subscriber did not keep up and its buffer filled.
	ErrSlowConsumer = errors.New("bus: the subscriber fell behind and was dropped")
	// ErrClosed: the bus shut down.
	ErrClosed = errors.New("bus: closed")
)

// DefaultBuffer is how many events a subscriber's stream holds before the
// subscriber counts as slow and is dropped.
const DefaultBuffer = 64

// Subscription is one open stream of a topic's events.
type Subscription struct {
	topic  string
	c      chan []byte
	hub    *Hub
	once   sync.Once
	reason error
}

// Events yields the stream's payloads (shared with other subscribers: read
// them, never change them). It is closed when the stream ends; Err says why.
func (s *Subscription) Events() <-chan []byte { return s.c }

// Err is why the stream ended: ErrSlowConsumer, ErrClosed, or nil after Close
// (or while it is open).
func (s *Subscription) Err() error {
	s.hub.mu.RLock()
	defer s.hub.mu.RUnlock()
	return s.reason
}

// Close ends the stream; its channel is closed.
func (s *Subscription) Close() { s.hub.remove(s, nil) }

// Hub fans events out in process to the open subscriptions, each with a
// bounded buffer: delivery never blocks, a subscriber whose buffer is full is
// dropped (ErrSlowConsumer). Both implementations use one.
type Hub struct {
	// Buffer is each subscription's capacity (DefaultBuffer when 0).
	Buffer int

	mu     sync.RWMutex
	topics map[string]map[*Subscription]struct{}
	closed bool

	published, publishFailed, delivered, dropped, subscribers atomic.Int64
}

// Subscribe opens a stream of topic (closed at once when the hub is closed).
func (h *Hub) Subscribe(topic string) *Subscription {
	n := h.Buffer
	if n <= 0 {
		n = DefaultBuffer
	}
	s := &Subscription{topic: topic, c: make(chan []byte, n), hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.reason = ErrClosed
		s.once.Do(func() { close(s.c) })
		return s
	}
	if h.topics == nil {
		h.topics = map[string]map[*Subscription]struct{}{}
	}
	if h.topics[topic] == nil {
		h.topics[topic] = map[*Subscription]struct{}{}
	}
	h.topics[topic][s] = struct{}{}
	h.subscribers.Add(1)
	return s
}

// Deliver hands payload to every open subscription of topic on this replica.
func (h *Hub) Deliver(topic string, payload []byte) {
	var slow []*Subscription
	h.mu.RLock()
	for s := range h.topics[topic] {
		select {
		case s.c <- payload:
			h.delivered.Add(1)
		default:
			slow = append(slow, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range slow {
		h.remove(s, ErrSlowConsumer)
	}
}

// remove ends s with reason. Channels are closed under the write lock, so no
// Deliver (under the read lock) sends on a closed one.
func (h *Hub) remove(s *Subscription, reason error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.topics[s.topic]
	if _, ok := subs[s]; !ok {
		return
	}
	delete(subs, s)
	if len(subs) == 0 {
		delete(h.topics, s.topic)
	}
	h.subscribers.Add(-1)
	if reason == ErrSlowConsumer {
		h.dropped.Add(1)
	}
	s.reason = reason
	s.once.Do(func() { close(s.c) })
}

// Published records one publication and whether it got through.
func (h *Hub) Published(err error) {
	if err != nil {
		h.publishFailed.Add(1)
		return
	}
	h.published.Add(1)
}

// Stats reports the hub's counters.
func (h *Hub) Stats() Stats {
	return Stats{Published: h.published.Load(), PublishFailed: h.publishFailed.Load(), Delivered: h.delivered.Load(),
		Dropped: h.dropped.Load(), Subscribers: h.subscribers.Load()}
}

// Close ends every open subscription with ErrClosed.
func (h *Hub) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, subs := range h.topics {
		for s := range subs {
			s.reason = ErrClosed
			s.once.Do(func() { close(s.c) })
			h.subscribers.Add(-1)
		}
	}
	h.topics = nil
	return nil
}

// Local is the in-process bus of the one-process shape: Publish delivers
// straight to this process's subscribers.
type Local struct{ Hub }

var _ Bus = (*Local)(nil)

// NewLocal returns an in-process bus whose subscriptions hold buffer events
// (DefaultBuffer when 0).
func NewLocal(buffer int) *Local { return &Local{Hub{Buffer: buffer}} }

// Publish delivers payload to this process's subscribers of topic.
func (l *Local) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		l.Published(err)
		return err
	}
	l.Deliver(topic, payload)
	l.Published(nil)
	return nil
}
