package router

// Subscriptions on /graphql. An operation is admitted exactly as a query is
// (admit: key or token, request quota, body, trusted documents, limits, cost
// quota), then run by the engine's subscription resolver, whose fetches to
// the owning subgraph stream over GraphQL-over-SSE and whose per-event entity
// fetches go to the other subgraphs as a query's would. Each subscription's
// events wait in a bounded queue for the protocol's sender
// (subscribe_ws.go: graphql-transport-ws; subscribe_sse.go: GraphQL over
// SSE): a client that reads slower than events come is dropped with a
// reason rather than buffered without bound.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/resolve"

	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
)

// SubscriptionSettings bound live subscriptions. A zero field takes its
// default (DefaultSubscriptionSettings).
type SubscriptionSettings struct {
	// PerKey bounds the subscriptions one developer key holds open on this
	// replica, over every connection and protocol; a publishable key's, those
	// of each client address (each visitor of its website).
	PerKey int
	// PerConnection bounds the subscriptions of one WebSocket connection.
	PerConnection int
	// Heartbeat is how often an idle stream is kept alive: a WebSocket ping,
	// an SSE comment.
	Heartbeat time.Duration
	// InitTimeout is how long a WebSocket may wait before connection_init.
	InitTimeout time.Duration
	// SendBuffer is how many events may wait for a slow client before its
	// subscription (its WebSocket connection) is dropped.
	SendBuffer int
	// SendTimeout bounds one write to a client.
	SendTimeout time.Duration
	// PublicFields are the Subscription root fields a publishable key may
	// open, from one of its origins (none: publishable keys open nothing).
	PublicFields []string
}

// DefaultSubscriptionSettings are the bounds unless configured.
func DefaultSubscriptionSettings() SubscriptionSettings {
	return SubscriptionSettings{PerKey: 100, PerConnection: 20, Heartbeat: 15 * time.Second, InitTimeout: 10 * time.Second,
		SendBuffer: 32, SendTimeout: 10 * time.Second}
}

func (s SubscriptionSettings) withDefaults() SubscriptionSettings {
	d := DefaultSubscriptionSettings()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pickDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&s.PerKey, d.PerKey)
	pick(&s.PerConnection, d.PerConnection)
	pick(&s.SendBuffer, d.SendBuffer)
	pickDur(&s.Heartbeat, d.Heartbeat)
	pickDur(&s.InitTimeout, d.InitTimeout)
	pickDur(&s.SendTimeout, d.SendTimeout)
	return s
}

// Codes of subscription refusals (extensions.code).
const (
	CodeTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS"
	CodeSlowConsumer         = "SLOW_CONSUMER"
	CodeShuttingDown         = "SHUTTING_DOWN"
)

// errNeedsStream answers a subscription sent as a plain request.
var errNeedsStream = errors.New("a subscription streams its events: send it with Accept: text/event-stream (GraphQL over SSE) or multipart/mixed;subscriptionSpec=1.0, or over a WebSocket with the graphql-transport-ws subprotocol")

// live is the router's registry of open subscriptions: per-key counts for
// the cap, and the shutdown signal every stream watches.
type live struct {
	cfg SubscriptionSettings

	mu       sync.Mutex
	perKey   map[string]int
	closing  chan struct{}
	shutOnce sync.Once
	open     atomic.Int64 // subscriptions running
}

func newLive(cfg SubscriptionSettings) *live {
	return &live{cfg: cfg.withDefaults(), perKey: map[string]int{}, closing: make(chan struct{})}
}

// acquire counts one more subscription for a key (keyless callers, the
// shim's internal calls, are not capped), or refuses it.
func (l *live) acquire(keyID string) *gqlerror.Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closing:
		return gqlErr(CodeShuttingDown, "the server is shutting down: subscribe again (to another replica)")
	default:
	}
	if keyID == "" {
		return nil
	}
	if l.perKey[keyID] >= l.cfg.PerKey {
		e := gqlErr(CodeTooManySubscriptions, fmt.Sprintf("this key already holds %d subscriptions on this server, the maximum: complete one first", l.cfg.PerKey))
		e.Extensions["limit"], e.Extensions["maximum"] = "subscriptions per key", l.cfg.PerKey
		return e
	}
	l.perKey[keyID]++
	return nil
}

func (l *live) release(keyID string) {
	if keyID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perKey[keyID]--; l.perKey[keyID] <= 0 {
		delete(l.perKey, keyID)
	}
}

// Shutdown ends every open subscription with a reason (WebSocket close 1001
// "server shutting down"; an SSE comment, then the end of the stream) and
// refuses new ones. Serve calls it when the server shuts down
// (http.Server.RegisterOnShutdown): hijacked WebSocket connections are not
// the server's to close, and SSE streams would hold its shutdown until
// their clients left.
func (rt *Router) Shutdown() {
	rt.live.shutOnce.Do(func() { close(rt.live.closing) })
}

// drainTimeout bounds how long the engine waits, once the router's context
// has ended, for the streams Shutdown ended to close.
const drainTimeout = 3 * time.Second

// stopAfter ends every stream with its reason when ctx ends, then stops the
// engine (its upstream subscriptions) once they have closed or drainTimeout
// has passed.
func (rt *Router) stopAfter(ctx context.Context, stopEngine context.CancelFunc) {
	context.AfterFunc(ctx, func() {
		rt.Shutdown()
		for deadline := time.Now().Add(drainTimeout); rt.live.open.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		stopEngine()
	})
}

// endKind is how a subscription ended.
type endKind int

const (
	endComplete endKind = iota // the source completed
	endError                   // the source failed: payload is a final response
	endSlow                    // its queue was full: the client reads too slowly
)

type ending struct {
	kind    endKind
	payload []byte
}

// sub is one running subscription: the engine writes its events in
// (resolve.SubscriptionResponseWriter), a protocol's sender takes them out.
type sub struct {
	events chan []byte
	end    chan ending   // holds the first ending only
	ended  chan struct{} // closed with the first ending
	up     chan struct{} // closed once its upstream stream is established
	upOnce sync.Once
	once   sync.Once
	buf    bytes.Buffer // the event being written, under the engine's lock
	stop   func()       // unsubscribes, releases the key's count; idempotent
	tel    *telemetry.Telemetry
}

var _ resolve.SubscriptionResponseWriter = (*sub)(nil)

func newSub(buffer int, tel *telemetry.Telemetry) *sub {
	return &sub{events: make(chan []byte, buffer), end: make(chan ending, 1), ended: make(chan struct{}),
		up: make(chan struct{}), stop: func() {}, tel: tel}
}

func (s *sub) finish(e ending) {
	s.once.Do(func() {
		s.end <- e
		close(s.ended)
	})
}

// upstreamUp marks the subscription's upstream stream established: the
// owning subgraph has answered, which it does once its resolver listens.
func (s *sub) upstreamUp() { s.upOnce.Do(func() { close(s.up) }) }

// upstreamKey carries a subscription's upstreamUp to the transport of its
// upstream request (signalUpstream), through the engine's contexts.
type upstreamKey struct{}

// signalUpstream tells a subscription that its upstream stream is
// established when the subgraph's response (its headers) arrives: the
// engine's SSE client connects synchronously but says so to no one. It wraps
// the engine's streaming client only.
type signalUpstream struct{ base http.RoundTripper }

func (t signalUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if up, ok := r.Context().Value(upstreamKey{}).(func()); ok {
		up() // a failure too: the engine reports it to the subscription
	}
	return res, err
}

// established waits until s's upstream stream is established, s has ended
// (a refusal, a failure to connect: its ending says so), or the wait is
// over: the protocols tell their client it is subscribed only then, so that
// nothing published after that is missed.
func (rt *Router) established(ctx context.Context, s *sub) {
	t := time.NewTimer(rt.timeout)
	defer t.Stop()
	select {
	case <-s.up:
	case <-s.ended:
	case <-ctx.Done():
	case <-rt.live.closing:
	case <-t.C:
		rt.log.Warn().Dur("waited", rt.timeout).Msg("subscription: upstream stream not established in time; the client is told it is subscribed anyway")
	}
}

func (s *sub) Write(p []byte) (int, error) { return s.buf.Write(p) }

// Flush queues the event written, or drops the subscription when its queue
// is full: the engine then unsubscribes it at once, and the sender closes the
// stream with the reason once the client has taken what it was sending (or
// the send times out).
func (s *sub) Flush() error {
	msg := bytes.Clone(s.buf.Bytes())
	s.buf.Reset()
	select {
	case s.events <- msg:
		return nil
	default:
		s.tel.SubscriptionDropped(telemetry.DropSlowConsumer)
		s.finish(ending{kind: endSlow})
		return errSlowConsumer
	}
}

var errSlowConsumer = errors.New("slow consumer")

func (s *sub) Complete()         { s.finish(ending{kind: endComplete}) }
func (s *sub) Error(data []byte) { s.finish(ending{kind: endError, payload: bytes.Clone(data)}) }
func (s *sub) Heartbeat() error  { return nil } // the protocols beat themselves

func slowMessage(n int) string {
	return fmt.Sprintf("slow consumer: %d events were waiting to be sent; read events as they come, and subscribe again", n)
}

// errorsPayload is a response of errors only, as a protocol's next event
// carries it.
func errorsPayload(errs ...*gqlerror.Error) []byte {
	b, _ := json.Marshal(map[string]any{"errors": errs})
	return b
}

// start runs an admitted operation as a stream of events in s: a
// subscription through the engine, or a query (which graphql-sse and
// graphql-transport-ws allow too) as one event. base carries the stream's
// lifetime (the connection's). It returns the refusal, for the client, or
// nil; a refusal releases everything it took.
func (rt *Router) start(base context.Context, a admitted, protocol string) (s *sub, refusal []*gqlerror.Error) {
	tel := telemetry.FromContext(base)
	// The operation's metrics count its start (how long it took to
	// subscribe), not how long it lives.
	defer func() { tel.Operation(base, a.req.OperationName, a.measure.Type, refusal != nil, time.Since(a.start)) }()
	s = newSub(rt.live.cfg.SendBuffer, tel)
	ctx, cancel := context.WithCancel(context.WithValue(trust.WithIdentity(base, a.id), upstreamKey{}, s.upstreamUp))
	op, err := rt.exec.operation(ctx, a.req.Query, a.req.OperationName, a.req.Variables, false)
	if err != nil {
		cancel()
		var reqErr *RequestError
		if errors.As(err, &reqErr) {
			return nil, engineErrors(reqErr.Err)
		}
		rt.log.Error().Err(err).Str("operation", a.req.OperationName).Msg("prepare subscription")
		return nil, []*gqlerror.Error{gqlErr(CodeInternal, "the operation failed: try again later")}
	}
	if a.key.Publishable && !rt.public(op) {
		cancel()
		return nil, []*gqlerror.Error{gqlErr(CodeForbidden, fmt.Sprintf("a publishable key subscribes only to %v; use a secret key from your server for anything else", rt.live.cfg.PublicFields))}
	}
	capKey := a.key.ID
	if a.key.Publishable && capKey != "" {
		// A website's key is every visitor's: each browser (by address)
		// gets the key's allowance, not all of them together.
		capKey += " " + a.client
	}
	if e := rt.live.acquire(capKey); e != nil {
		cancel()
		return nil, []*gqlerror.Error{e}
	}
	tel.SubscriptionActive(protocol, 1)
	rt.live.open.Add(1)
	var stopOnce sync.Once
	var id resolve.SubscriptionIdentifier
	s.stop = func() {
		stopOnce.Do(func() {
			if op.sub != nil {
				rt.exec.resolver.UnsubscribeSubscription(id)
			}
			cancel()
			rt.live.release(capKey)
			tel.SubscriptionActive(protocol, -1)
			rt.live.open.Add(-1)
		})
	}
	var caller http.Header
	if rt.exec.callerHeader {
		caller = http.Header{CallerHeader: {a.id.Digest()}}
	}
	if op.sub == nil { // a query: one event, then complete
		s.upstreamUp()
		go func() {
			qctx, qcancel := context.WithTimeout(ctx, rt.timeout)
			defer qcancel()
			var out bytes.Buffer
			if err := rt.exec.resolve(qctx, op.plan, op.opHash, op.vars, op.remap, caller, &out); err != nil {
				rt.log.Error().Err(err).Str("operation", a.req.OperationName).Msg("execute operation")
				s.Error(errorsPayload(gqlErr(CodeInternal, "the operation failed: try again later")))
				return
			}
			s.buf.Write(out.Bytes())
			s.Flush()
			s.Complete()
		}()
		return s, nil
	}
	rctx := rt.exec.context(ctx, op.sub.Response.Response.Info, op.opHash, op.vars, op.remap, caller)
	// Subscriptions never share a source: the subgraph sees one caller's
	// identity per stream (mySessions-like fields depend on it), and each
	// subscription's own upstream request tells it when it is established
	// (a second one joining a shared source would not know).
	id = resolve.SubscriptionIdentifier{ConnectionID: resolve.NewConnectionID(), SubscriptionID: 1}
	rctx.SubgraphHeadersBuilder = callerHeaders{digest: a.id.Digest(), source: uint64(id.ConnectionID)}
	if err := rt.exec.resolver.AsyncResolveGraphQLSubscription(rctx, op.sub.Response, s, id); err != nil {
		s.stop()
		rt.log.Error().Err(err).Str("operation", a.req.OperationName).Msg("start subscription")
		return nil, []*gqlerror.Error{gqlErr(CodeInternal, "the subscription could not start: try again later")}
	}
	return s, nil
}

// public reports whether every root field of a subscription is one that
// publishable keys may open.
func (rt *Router) public(op *prepared) bool {
	if op.sub == nil || op.sub.Response == nil || op.sub.Response.Response == nil || op.sub.Response.Response.Data == nil {
		return false
	}
	fields := op.sub.Response.Response.Data.Fields
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if f.Info == nil || !slices.Contains(rt.live.cfg.PublicFields, f.Info.Name) {
			return false
		}
	}
	return true
}

// callerHeaders gives a subscription's source the caller's digest; the
// engine hashes HashAll into the source's identity, which source makes
// unique: every subscription gets a source of its own.
type callerHeaders struct {
	digest string
	source uint64
}

func (c callerHeaders) HeadersForSubgraph(string) (http.Header, uint64) {
	return http.Header{CallerHeader: {c.digest}}, c.HashAll()
}

func (c callerHeaders) HashAll() uint64 {
	h := fnv.New64a()
	h.Write([]byte(c.digest))
	binary.Write(h, binary.LittleEndian, c.source)
	return h.Sum64() | 1 // never 0: 0 means "no headers"
}

// deliver sends s's events with send until s ends, the server shuts down,
// ctx ends or a send fails. Events queued before the source completed are
// sent before the ending is reported. beat, every heartbeat, keeps an idle
// stream alive (nil: none).
func (rt *Router) deliver(ctx context.Context, s *sub, protocol string, send func([]byte) error, beat func() error) (ending, string) {
	tel := telemetry.FromContext(ctx)
	var tick <-chan time.Time
	if beat != nil {
		t := time.NewTicker(rt.live.cfg.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case msg := <-s.events:
			if err := send(msg); err != nil {
				tel.SubscriptionDropped(telemetry.DropWriteFailed)
				return ending{}, telemetry.DropWriteFailed
			}
			tel.SubscriptionEvent(protocol)
		case e := <-s.end:
			if e.kind == endSlow { // counted when it overflowed
				return e, telemetry.DropSlowConsumer
			}
			for { // what came before the end goes first
				select {
				case msg := <-s.events:
					if err := send(msg); err != nil {
						tel.SubscriptionDropped(telemetry.DropWriteFailed)
						return ending{}, telemetry.DropWriteFailed
					}
					tel.SubscriptionEvent(protocol)
					continue
				default:
				}
				return e, ""
			}
		case <-tick:
			if err := beat(); err != nil {
				tel.SubscriptionDropped(telemetry.DropWriteFailed)
				return ending{}, telemetry.DropWriteFailed
			}
		case <-rt.live.closing:
			tel.SubscriptionDropped(telemetry.DropShutdown)
			return ending{}, telemetry.DropShutdown
		case <-ctx.Done():
			return ending{}, "gone"
		}
	}
}

// asyncErrors formats a Go error of one event's resolution (a fetch failed,
// timed out) for the client, without naming anything internal.
type asyncErrors struct{ rt *Router }

func (a asyncErrors) WriteError(ctx *resolve.Context, err error, _ *resolve.GraphQLResponse, w io.Writer) {
	a.rt.log.Warn().Err(err).Msg("subscription event")
	w.Write(errorsPayload(gqlErr(CodeInternal, "this event could not be resolved")))
	if f, ok := w.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// initLive sets the router up for subscriptions.
func (rt *Router) initLive(cfg SubscriptionSettings) {
	rt.live = newLive(cfg)
	rt.exec.resolver.SetAsyncErrorWriter(asyncErrors{rt})
}
