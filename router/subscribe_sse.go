package router

// GraphQL over Server-Sent Events, the graphql-sse protocol's "distinct
// connections" mode: one request (POST with a JSON body, or GET with URL
// parameters) asking for Accept: text/event-stream is one operation, its
// results sent as `event: next` and its end as `event: complete`.

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/telemetry"
)

// MediaEventStream is the media type of an SSE response.
const MediaEventStream = "text/event-stream"

// framing is how a streamed HTTP response frames a subscription's events:
// GraphQL over SSE, or multipart HTTP (subscribe_multipart.go).
type framing struct {
	protocol    string // the metrics' label
	contentType string
	open        []byte // sent once the source listens: the client knows it is subscribed
	beat        []byte
	next        func(payload []byte) [][]byte
	complete    []byte
	// dropped says why the router ended the stream (a slow consumer, the
	// server shutting down: code), then ends it.
	dropped func(code, msg string) [][]byte
}

// serveStream runs an admitted operation as a streamed response. Refusals
// before the stream starts are ordinary JSON error responses.
func (rt *Router) serveStream(w http.ResponseWriter, r *http.Request, a admitted, f framing) {
	rs := responder{w: w, media: MediaGraphQLResponse}
	s, errs := rt.start(r.Context(), a, f.protocol)
	if errs != nil {
		status := http.StatusBadRequest
		switch errs[0].Extensions["code"] {
		case CodeTooManySubscriptions:
			status = http.StatusTooManyRequests
		case CodeShuttingDown:
			status = http.StatusServiceUnavailable
		case CodeForbidden:
			status = http.StatusForbidden
		case CodeInternal:
			status = http.StatusInternalServerError
		}
		rs.errors(status, errs...)
		return
	}
	defer s.stop()
	// The client learns it is subscribed from the response: not before the
	// source listens, or what happens meanwhile would be missed.
	rt.established(r.Context(), s)
	// A stream outlives the server's read and write timeouts: clear them,
	// and bound each write instead. The read deadline matters too: when it
	// passes, net/http cancels the request's context.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	var frame bytes.Buffer
	write := func(parts ...[]byte) error {
		frame.Reset()
		for _, p := range parts {
			frame.Write(p)
		}
		rc.SetWriteDeadline(time.Now().Add(rt.live.cfg.SendTimeout))
		if _, err := w.Write(frame.Bytes()); err != nil {
			return err
		}
		return rc.Flush()
	}
	if write(f.open) != nil {
		return
	}
	next := func(payload []byte) error { return write(f.next(payload)...) }
	e, dropped := rt.deliver(r.Context(), s, f.protocol, next, func() error { return write(f.beat) })
	switch dropped {
	case "":
		if e.kind == endError && next(e.payload) != nil {
			return
		}
		write(f.complete)
	case telemetry.DropSlowConsumer:
		write(f.dropped(CodeSlowConsumer, slowMessage(rt.live.cfg.SendBuffer))...)
	case telemetry.DropShutdown:
		write(f.dropped(CodeShuttingDown, "server shutting down")...)
	}
}

// sse frames GraphQL over SSE. The router's own endings are a comment
// saying why; a slow consumer also gets a next event with the error, and
// neither gets complete: graphql-sse clients then reconnect.
var sse = framing{
	protocol:    "sse",
	contentType: MediaEventStream + "; charset=utf-8",
	open:        []byte(":\n\n"),
	beat:        []byte(":\n\n"),
	next:        func(payload []byte) [][]byte { return [][]byte{sseNext, payload, sseEnd} },
	complete:    []byte("event: complete\ndata: \n\n"),
	dropped: func(code, msg string) [][]byte {
		if code == CodeShuttingDown {
			return [][]byte{[]byte(": " + msg + "\n\n")}
		}
		return [][]byte{[]byte(": dropped: " + msg + "\n\n"), sseNext, errorsPayload(&gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}), sseEnd}
	},
}

var (
	sseNext = []byte("event: next\ndata: ")
	sseEnd  = []byte("\n\n")
)

// OriginChecker tells the origins some publishable key lists
// (access.Service implements it).
type OriginChecker interface {
	OriginRegistered(ctx context.Context, origin string) (bool, error)
}

// preflight answers a website's CORS preflight: a page on another origin
// sends its publishable key in x-service-key, which is not a header browsers
// send cross-origin unasked. Only origins some publishable key lists get
// the CORS headers; the key itself is checked against its own origins when
// the stream is opened.
func (rt *Router) preflight(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	w.Header().Add("Vary", "Origin")
	ok := false
	if rt.origins != nil && origin != "" {
		var err error
		if ok, err = rt.origins.OriginRegistered(r.Context(), origin); err != nil {
			rt.log.Error().Err(err).Msg("CORS preflight")
		}
	}
	if !ok {
		responder{w: w, media: MediaJSON}.errors(http.StatusForbidden, gqlErr(CodeForbidden, "no publishable key is registered for origin "+apierr.Quote(origin)))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, "+access.Header+", Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// KeepStreams lets h serve the router's streams (a WebSocket, an SSE
// response) beyond the server's read and write timeouts, which bound
// ordinary requests: a proxy in front of the router (the shim served alone)
// wraps its handler with it.
func KeepStreams(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, streamed := streaming(r); streamed || isWebSocket(r) {
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}
