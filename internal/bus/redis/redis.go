// Package redis is the event bus across replicas on Redis pub/sub (the
// package bus doc says why pub/sub): Publish is one PUBLISH, bounded by the
// platform's short Redis timeouts; each bus holds one subscriber connection
// (PSUBSCRIBE on its prefix) whose events a bus.Hub fans out to this
// replica's streams.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/vitolahq/vitola/internal/bus"
	kvredis "github.com/vitolahq/vitola/internal/kv/redis"
)

// Bus implements bus.Bus.
type Bus struct {
	hub    bus.Hub
	client *goredis.Client
	ps     *goredis.PubSub
	prefix string
	done   chan struct{}
	close  sync.Once
}

var _ bus.Bus = (*Bus)(nil)

// ErrUnreachable is Open's error when Redis did not confirm the subscription:
// the bus it returns with it works, and listens once Redis answers.
var ErrUnreachable = errors.New("no answer from Redis to the subscription")

// Open connects to the server at url and listens to every topic under prefix
// (a deployment's own, as kv's keys are: "vitola:bus:"); buffer is each
// subscription's capacity (bus.DefaultBuffer when 0). A malformed URL is an
// error and no bus. When Redis does not answer, Open returns a working bus
// and ErrUnreachable: go-redis reconnects the listener by itself (then and
// after any failure), and events published while it is away are lost.
func Open(ctx context.Context, url, prefix string, buffer int) (*Bus, error) {
	opts, err := kvredis.Options(url)
	if err != nil {
		return nil, err
	}
	b := &Bus{hub: bus.Hub{Buffer: buffer}, client: goredis.NewClient(opts), prefix: prefix, done: make(chan struct{})}
	b.ps = b.client.PSubscribe(ctx, prefix+"*")
	// The first reply confirms the subscription: from here on, no event of
	// this bus's prefix is missed while the connection holds.
	_, err = b.ps.Receive(ctx)
	go b.listen()
	if err != nil {
		return b, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return b, nil
}

// listen hands every message to the hub until the bus closes. go-redis's
// channel pings the connection and reconnects it (and resubscribes) when it
// fails; a buffer of its own holds messages while the hub delivers.
func (b *Bus) listen() {
	defer close(b.done)
	for m := range b.ps.Channel(goredis.WithChannelSize(1024), goredis.WithChannelHealthCheckInterval(5*time.Second)) {
		b.hub.Deliver(strings.TrimPrefix(m.Channel, b.prefix), []byte(m.Payload))
	}
}

// Publish sends payload to topic's subscribers on every replica, within ctx
// and the client's write and read timeouts.
func (b *Bus) Publish(ctx context.Context, topic string, payload []byte) error {
	err := b.client.Publish(ctx, b.prefix+topic, payload).Err()
	b.hub.Published(err)
	if err != nil {
		return fmt.Errorf("publish %s: %w", topic, err)
	}
	return nil
}

// Subscribe opens a stream of topic on this replica.
func (b *Bus) Subscribe(topic string) *bus.Subscription { return b.hub.Subscribe(topic) }

// Stats reports the bus's counters.
func (b *Bus) Stats() bus.Stats { return b.hub.Stats() }

// Close ends every stream (bus.ErrClosed) and the Redis connections.
func (b *Bus) Close() error {
	var err error
	b.close.Do(func() {
		b.hub.Close()
		err = b.ps.Close()
		<-b.done
		if cerr := b.client.Close(); err == nil {
			err = cerr
		}
	})
	return err
}
