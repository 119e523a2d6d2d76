// Package telemetry is what the platform reports about itself: Prometheus
// metrics on a listener of their own, and OpenTelemetry traces sent over
// OTLP/HTTP. Every part calls it the same way: an HTTP middleware (Handler)
// and a RoundTripper (Transport) at the edges of each component, and a few
// calls (FromContext(ctx).Something, Start) where the work happens. The
// Telemetry travels in the request's context, so the parts need no new
// dependencies and subgraphs never import each other. A nil *Telemetry, or
// one with both halves off, costs nothing: its middleware is the handler
// itself.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Options configure New.
type Options struct {
	// Metrics turns the Prometheus metrics on (the listener that serves them
	// is the caller's: see Metrics.Handler).
	Metrics bool
	// OTLPEndpoint is an OpenTelemetry collector's OTLP/HTTP base URL
	// (http://HOST:4318; /v1/traces is added when it has no path). Empty:
	// tracing off.
	OTLPEndpoint string
	// SampleRatio is the share of new traces recorded (0 to 1); a request
	// that arrives with a traceparent follows its caller's decision.
	SampleRatio float64
	// Service names the process in traces (service.name).
	Service string
	// Logger logs failed requests with their request ID (the trace ID).
	Logger zerolog.Logger
}

// Telemetry is one platform instance's metrics and tracer.
type Telemetry struct {
	// Metrics is nil when metrics are off.
	Metrics *Metrics
	tracer  trace.Tracer
	tracing bool
	tp      *sdktrace.TracerProvider
	log     zerolog.Logger
}

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// New builds an instance's telemetry. Close flushes and stops it.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{tracer: noop.NewTracerProvider().Tracer(""), log: o.Logger}
	if o.Metrics {
		t.Metrics = NewMetrics()
	}
	if o.OTLPEndpoint == "" {
		return t, nil
	}
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		return nil, fmt.Errorf("trace sample ratio %v: give a number from 0 to 1", o.SampleRatio)
	}
	endpoint, err := tracesURL(o.OTLPEndpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	service := o.Service
	if service == "" {
		service = "vitola"
	}
	t.tp = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	t.tracer = t.tp.Tracer("github.com/vitolahq/vitola")
	t.tracing = true
	return t, nil
}

// tracesURL is the OTLP/HTTP traces URL of a collector's base URL.
func tracesURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The value is not echoed: a collector URL may carry a token.
		return "", errors.New("the OTLP endpoint must be an http or https URL, e.g. http://127.0.0.1:4318")
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Close sends the spans still buffered and stops the exporter.
func (t *Telemetry) Close(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Tracing reports whether traces are on.
func (t *Telemetry) Tracing() bool { return t != nil && t.tracing }

func (t *Telemetry) off() bool { return t == nil || (t.Metrics == nil && !t.tracing) }

type ctxKey struct{}

// with puts t in ctx.
func with(ctx context.Context, t *Telemetry) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the Telemetry of the request ctx belongs to (nil
// outside one: every method of a nil Telemetry does nothing).
func FromContext(ctx context.Context) *Telemetry {
	t, _ := ctx.Value(ctxKey{}).(*Telemetry)
	return t
}

// Start starts a span under ctx's, when the request is traced; otherwise
// it returns ctx and a span that records nothing.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t := FromContext(ctx)
	if t == nil || !t.tracing || unsampled(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, opts...)
}

// unsampled reports a trace whose spans are not recorded: the parent-based
// sampler would drop a child too, so none is made (its context would carry
// nothing the parent's does not).
func unsampled(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	return sc.IsValid() && !sc.IsSampled()
}

// RequestID is the request's ID in logs: the trace ID when tracing is on,
// empty otherwise.
func RequestID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}
