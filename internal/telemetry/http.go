package telemetry

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/vitolahq/vitola/internal/inproc"
)

// RequestIDHeader carries the request ID (the trace ID) in every answer of
// the public origins when tracing is on, so a user can quote it.
const RequestIDHeader = "X-Request-Id"

// UnmatchedRoute is the route label of a request no route took (404, 405,
// redirects to the canonical path).
const UnmatchedRoute = "unmatched"

// Handler instruments a component's handler (server names it: router, or a
// subgraph's name): it continues the caller's trace from traceparent, starts
// a server span, counts the request and its time by route pattern (what the
// ServeMux under it matched, never the raw path), and puts the Telemetry in
// the request's context for the calls below.
func (t *Telemetry) Handler(server string, next http.Handler) http.Handler {
	return t.handler(server, false, next)
}

// EdgeHandler is Handler for a public origin (api, payments): its answers
// also carry the request ID (RequestIDHeader) for users to quote.
func (t *Telemetry) EdgeHandler(server string, next http.Handler) http.Handler {
	return t.handler(server, true, next)
}

func (t *Telemetry) handler(server string, edge bool, next http.Handler) http.Handler {
	if t.off() {
		return next
	}
	spanName := "HTTP " + server
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Unsampled requests (most, at a low ratio) allocate only what
		// propagation needs: names and attributes are set on recorded spans.
		start := time.Now()
		// An in-process call arrives with its caller's context, which holds
		// this Telemetry and the trace already (the transport put the same
		// into traceparent): then neither is added again, and the request
		// is not copied.
		ctx := r.Context()
		if FromContext(ctx) != t {
			ctx = with(ctx, t)
		}
		var span trace.Span
		if t.tracing {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				ctx = propagator.Extract(ctx, headerCarrier(r.Header))
			}
			// A caller's unsampled trace goes on without spans here.
			if !unsampled(ctx) {
				ctx, span = t.tracer.Start(ctx, spanName, serverSpan...)
			}
			if edge {
				w.Header().Set(RequestIDHeader, RequestID(ctx))
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		defer func() {
			route := r.Pattern // set by the ServeMux below
			if route == "" {
				route = UnmatchedRoute
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			if t.Metrics != nil {
				t.Metrics.observeHTTP(server, route, status, time.Since(start))
			}
			if span != nil {
				if span.IsRecording() {
					span.SetName(server + " " + route)
					span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
					if status >= 500 {
						span.SetStatus(codes.Error, "")
					}
				}
				span.End()
			}
			if status >= 500 {
				t.log.Warn().Str("request_id", RequestID(ctx)).Str("server", server).Str("route", route).Int("status", status).Msg("request failed")
			} else if e := t.log.Debug(); e.Enabled() {
				e.Str("request_id", RequestID(ctx)).Str("server", server).Str("route", route).Int("status", status).Dur("took", time.Since(start)).Msg("request")
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// headerCarrier is propagation.HeaderCarrier without canonicalizing the
// W3C header names on every call (an allocation each).
type headerCarrier http.Header

func canonical(key string) string {
	switch key {
	case "traceparent":
		return "Traceparent"
	case "tracestate":
		return "Tracestate"
	}
	return http.CanonicalHeaderKey(key)
}

func (c headerCarrier) Get(key string) string {
	if v := c[canonical(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[canonical(key)] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Span options, made once rather than per request.
var (
	serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer below.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Transport instruments a component's calls to the others: each call gets a
// client span whose context goes along as traceparent (in-process calls
// too), and its time and failure (no answer, or a 5xx) are counted by caller
// and target. hosts names the targets by URL host; another host counts as
// "other". A base with a Propagates method that reports true (a
// trust.Transport given Propagator) adds traceparent itself.
func (t *Telemetry) Transport(caller string, hosts map[string]string, base http.RoundTripper) http.RoundTripper {
	if t.off() {
		return base
	}
	tr := &transport{t: t, caller: caller, base: base, targets: map[string]*target{}}
	if p, ok := base.(interface{ Propagates() bool }); ok && p.Propagates() {
		tr.propagatedBelow = true
	}
	for host, name := range hosts {
		tr.targets[host] = tr.newTarget(name)
	}
	return tr
}

// ServesInProcess passes the question on to the transport wrapped (see
// inproc.Local).
func (tr *transport) ServesInProcess(host string) bool { return inproc.InProcess(tr.base, host) }

type transport struct {
	t       *Telemetry
	caller  string
	base    http.RoundTripper
	targets map[string]*target // read-only after Transport
	// propagatedBelow: base adds traceparent (see Propagator) to a copy of
	// its own, so this transport does not copy the request for it.
	propagatedBelow bool
	other           sync.Once
	unknown         *target
}

// target is one callee's span name and metric children, made once.
type target struct {
	name     string
	span     string
	duration prometheus.Observer
	errors   prometheus.Counter
}

// Propagator returns the function a propagating base transport (a
// trust.Transport's Propagate, see Transport) calls to put ctx's trace
// context into a request's header; nil when tracing is off.
func (t *Telemetry) Propagator() func(ctx context.Context, h http.Header) {
	if t == nil || !t.tracing {
		return nil
	}
	return func(ctx context.Context, h http.Header) { propagator.Inject(ctx, headerCarrier(h)) }
}

func (tr *transport) newTarget(name string) *target {
	tg := &target{name: name, span: "fetch " + name}
	if m := tr.t.Metrics; m != nil {
		tg.duration = m.fetchDuration.WithLabelValues(tr.caller, name)
		tg.errors = m.fetchErrors.WithLabelValues(tr.caller, name)
	}
	return tg
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	tg := tr.targets[r.URL.Host]
	if tg == nil {
		tr.other.Do(func() { tr.unknown = tr.newTarget("other") })
		tg = tr.unknown
	}
	start := time.Now()
	var span trace.Span
	if tr.t.tracing {
		ctx := r.Context()
		if !unsampled(ctx) {
			ctx, span = tr.t.tracer.Start(ctx, tg.span, clientSpan...)
			if span.IsRecording() {
				span.SetAttributes(attribute.String("vitola.subgraph", tg.name))
			}
		}
		// The callee continues the trace (sampled or not) from traceparent.
		if tr.propagatedBelow {
			// The transport below copies the request anyway (to sign it)
			// and adds traceparent to its copy: this one copies it only to
			// hand down a span's context.
			if span != nil {
				r = r.WithContext(ctx)
			}
		} else {
			// A RoundTripper must not change its caller's request: this
			// one gets a header map of its own (the values it shares are
			// never changed), cheaper than a deep Clone.
			h := make(http.Header, len(r.Header)+1)
			for k, v := range r.Header {
				h[k] = v
			}
			r = r.WithContext(ctx)
			r.Header = h
			propagator.Inject(ctx, headerCarrier(h))
		}
	}
	res, err := tr.base.RoundTrip(r)
	failed := err != nil || res.StatusCode >= 500
	if tg.duration != nil {
		tg.duration.Observe(time.Since(start).Seconds())
		if failed {
			tg.errors.Inc()
		}
	}
	if span != nil {
		if span.IsRecording() {
			if res != nil {
				span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
			}
			if failed {
				span.SetStatus(codes.Error, "")
			}
		}
		span.End()
	}
	return res, err
}
