package router

// GraphQL over Server-Sent Events, the graphql-sse protocol's "distinct
// connections" mode: one request (POST with a JSON body, or GET with URL
// parameters) asking for Accept: text/event-stream is one operation, its
// results sent as `event: next` and its end as `event: complete`.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/telemetry"
)

// MediaEventStream is the media type of an SSE response.
const MediaEventStream = "text/event-stream"

// wantsEventStream reports a request for GraphQL over SSE: its Accept names
// text/event-stream.
func wantsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			typ, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(typ), MediaEventStream) {
				return true
			}
		}
	}
	return false
}

// serveEventStream runs an admitted operation as an SSE stream. Refusals
// before the stream starts are ordinary JSON error responses.
func (rt *Router) serveEventStream(w http.ResponseWriter, r *http.Request, a admitted) {
	rs := responder{w: w, media: MediaGraphQLResponse}
	s, errs := rt.start(r.Context(), a, "sse")
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
	// A stream outlives the server's read and write timeouts: clear them,
	// and bound each write instead. The read deadline matters too: when it
	// passes, net/http cancels the request's context.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", MediaEventStream+"; charset=utf-8")
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
	if write([]byte(":\n\n")) != nil { // the headers go now: the client knows it is subscribed
		return
	}
	next := func(payload []byte) error { return write(sseNext, payload, sseEnd) }
	beat := func() error { return write([]byte(":\n\n")) }
	e, dropped := rt.deliver(r.Context(), s, "sse", next, beat)
	switch dropped {
	case "":
		if e.kind == endError {
			if next(e.payload) != nil {
				return
			}
		}
		write(sseComplete)
	case telemetry.DropSlowConsumer:
		msg := slowMessage(rt.live.cfg.SendBuffer)
		write([]byte(": dropped: "+msg+"\n\n"), sseNext, errorsPayload(&gqlerror.Error{Message: msg, Extensions: map[string]any{"code": CodeSlowConsumer}}), sseEnd)
	case telemetry.DropShutdown:
		write([]byte(": server shutting down\n\n"))
	}
}

var (
	sseNext     = []byte("event: next\ndata: ")
	sseEnd      = []byte("\n\n")
	sseComplete = []byte("event: complete\ndata: \n\n")
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
		if isWebSocket(r) || wantsEventStream(r) {
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}
