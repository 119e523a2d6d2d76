package subgraph

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Subscriptions: a subgraph serves them to the router as GraphQL over SSE on
// its /graphql endpoint (a POST with Accept: text/event-stream, the engine's
// "sse_post" protocol): one `event: next` per event, then `event: complete`.

// SSEKeepAlive is how often an idle stream sends a comment, so that proxies
// and the router see it alive.
const SSEKeepAlive = 15 * time.Second

// sse is gqlgen's SSE transport for a stream that outlives the server's write
// timeout: a subscription lasts until the router or the subgraph ends it.
type sse struct{ transport.SSE }

func (t sse) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// Not every writer has a deadline (the in-process transport's has none).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	hw := &heldWriter{ResponseWriter: w}
	defer hw.release()
	t.SSE.Do(hw, r.WithContext(context.WithValue(r.Context(), dispatchedKey{}, hw)), exec)
}

// heldWriter holds a stream's response back (gqlgen writes the headers and
// a first comment before it runs the operation) until the operation has
// been dispatched: a subscription's resolver has subscribed to its events
// by then. The router answers its client once this response starts, so a
// client told "subscribed" misses no event published after.
type heldWriter struct {
	http.ResponseWriter
	mu   sync.Mutex
	done bool         // released: writes go straight through
	held bytes.Buffer // what was written before
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		return w.held.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *heldWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// release sends what was held and lets the rest through.
func (w *heldWriter) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if w.held.Len() > 0 {
		w.ResponseWriter.Write(w.held.Bytes())
		w.held.Reset()
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// dispatchedKey carries a stream's heldWriter to the operation interceptor.
type dispatchedKey struct{}

// EndStream ends the subscription whose resolver context is ctx with err as
// its last event, an `event: next` carrying {"errors": [err], "data": null}
// (then `event: complete`). The resolver calls it, then closes its channel.
func EndStream(ctx context.Context, err *gqlerror.Error) {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
	}
}

// StreamError is the error that ends a stream: code goes in extensions.code.
func StreamError(code, msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
}

type streamEndKey struct{}

type streamEnd struct {
	mu  sync.Mutex
	err *gqlerror.Error
}

// streamErrors lets a subscription end with an error: gqlgen ends a stream
// when the resolver's channel closes, with no way to say why. The operation
// interceptor gives each subscription a place for that error (EndStream); the
// response interceptor sends it once the channel has closed. The operation
// interceptor also releases the stream's held response (heldWriter) once
// the resolver has run.
type streamErrors struct{}

var (
	_ graphql.HandlerExtension     = streamErrors{}
	_ graphql.OperationInterceptor = streamErrors{}
	_ graphql.ResponseInterceptor  = streamErrors{}
)

func (streamErrors) ExtensionName() string                   { return "StreamErrors" }
func (streamErrors) Validate(graphql.ExecutableSchema) error { return nil }

func (streamErrors) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc := graphql.GetOperationContext(ctx); oc != nil && oc.Operation != nil && oc.Operation.Operation == "subscription" {
		ctx = context.WithValue(ctx, streamEndKey{}, &streamEnd{})
	}
	h := next(ctx) // a subscription's resolver has subscribed
	if w, ok := ctx.Value(dispatchedKey{}).(*heldWriter); ok {
		w.release()
	}
	return h
}

func (streamErrors) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil {
		return resp
	}
	e, ok := ctx.Value(streamEndKey{}).(*streamEnd)
	if !ok {
		return nil
	}
	e.mu.Lock()
	err := e.err
	e.err = nil // sent once; the next call ends the stream
	e.mu.Unlock()
	if err == nil {
		return nil
	}
	return &graphql.Response{Errors: gqlerror.List{err}, Data: []byte("null")}
}
