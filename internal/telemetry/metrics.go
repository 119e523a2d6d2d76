package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// MaxOperationNames bounds the operation label: the first this many distinct
// GraphQL operation names are reported by name; any later one, and an
// operation without a name, is reported as OtherOperation.
const MaxOperationNames = 100

// OtherOperation is the operation label of unnamed operations and of names
// beyond MaxOperationNames.
const OtherOperation = "other"

// Metrics are one instance's Prometheus metrics, in a registry of its own
// (never the global one), so several instances can run in one process.
// Every label is bounded: route patterns (never raw paths), status codes,
// subgraph and limit names, at most MaxOperationNames operation names,
// stable outcome codes; never an ID, key or query.
type Metrics struct {
	Registry *prometheus.Registry

	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	operations      *prometheus.CounterVec
	opDuration      *prometheus.HistogramVec
	fetchDuration   *prometheus.HistogramVec
	fetchErrors     *prometheus.CounterVec
	limitRejections *prometheus.CounterVec
	planCache       *prometheus.CounterVec
	planHits        prometheus.Counter
	planMisses      prometheus.Counter
	credits         *prometheus.CounterVec
	imageFetches    *prometheus.CounterVec
	idempotency     *prometheus.CounterVec
	storeErrors     *prometheus.CounterVec
	redisErrors     prometheus.Counter
	redisFallback   prometheus.Gauge
	quotaRefusals   *prometheus.CounterVec
	subs            *subscriptionMetrics

	// Label children, cached so that a request allocates no label strings.
	mu       sync.RWMutex
	httpKids map[httpKey]httpKid
	opKids   map[opKey]opKid
	names    map[string]struct{} // operation names given a label of their own
}

type httpKey struct {
	server, route string
	code          int
}

type httpKid struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type opKey struct{ name, typ, result string }

type opKid struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics registers every metric, and the Go runtime and process
// collectors, in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_http_requests_total",
			Help: "HTTP requests answered, by server (api, payments, router or a subgraph), route pattern and status code."}, []string{"server", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vitola_http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by server, route pattern and status code.", Buckets: prometheus.DefBuckets}, []string{"server", "route", "code"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_graphql_operations_total",
			Help: "GraphQL operations the router ran, by operation name (at most 100, then \"other\"), type and result (ok or error)."}, []string{"operation", "type", "result"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vitola_graphql_operation_duration_seconds",
			Help: "Time the router took to check, plan and run a GraphQL operation, by operation name, type and result.", Buckets: prometheus.DefBuckets}, []string{"operation", "type", "result"}),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vitola_subgraph_fetch_duration_seconds",
			Help: "Time of one internal call, by caller (router, shim, or a subgraph) and subgraph (or router: the shim's federated calls).", Buckets: prometheus.DefBuckets}, []string{"caller", "subgraph"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_subgraph_fetch_errors_total",
			Help: "Internal calls that failed (no answer, or a 5xx), by caller and subgraph."}, []string{"caller", "subgraph"}),
		limitRejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_graphql_limit_rejections_total",
			Help: "GraphQL operations refused before running, by limit (depth, aliases, cost, tokens...; parse and validation for documents that are not valid)."}, []string{"limit"}),
		planCache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_graphql_plan_cache_requests_total",
			Help: "Query plan cache look-ups, by result (hit or miss)."}, []string{"result"}),
		credits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_credits_total",
			Help: "AI credits of the paid routes, by action: held (reserved), charged (settled), released (given back)."}, []string{"action"}),
		imageFetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_image_fetches_total",
			Help: "Images fetched (or decoded from data URLs) for matching, by outcome: ok or the refusal's code."}, []string{"outcome"}),
		idempotency: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_idempotency_requests_total",
			Help: "Idempotency-Key look-ups that did not run the request, by outcome: replayed (the stored response), conflict (the key with another request), in_flight."}, []string{"outcome"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_store_errors_total",
			Help: "Store queries of a request that failed, and stores that failed a readiness check, by store."}, []string{"store"}),
		quotaRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_quota_refusals_total",
			Help: "Requests over a developer key's quota, by policy (requests or cost) and mode: enforce (refused with 429) or measure (let through, counted)."}, []string{"policy", "mode"}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "vitola_redis_errors_total",
			Help: "Redis commands that failed (a missing key is not a failure)."}),
		redisFallback: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vitola_redis_fallback",
			Help: "1 while Redis is unreachable and the in-process fallback serves quotas, sign-in limits and persisted queries (per replica), else 0."}),
		httpKids: map[httpKey]httpKid{},
		opKids:   map[opKey]opKid{},
		names:    map[string]struct{}{},
	}
	m.Registry.MustRegister(m.httpRequests, m.httpDuration, m.operations, m.opDuration, m.fetchDuration, m.fetchErrors,
		m.limitRejections, m.planCache, m.credits, m.imageFetches, m.idempotency, m.storeErrors, m.redisErrors, m.redisFallback, m.quotaRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.subs = newSubscriptionMetrics(m.Registry)
	// The fixed label values exist from the start, so a dashboard sees zeros.
	m.planHits, m.planMisses = m.planCache.WithLabelValues("hit"), m.planCache.WithLabelValues("miss")
	for _, a := range []string{"held", "charged", "released"} {
		m.credits.WithLabelValues(a)
	}
	for _, o := range []string{"replayed", "conflict", "in_flight"} {
		m.idempotency.WithLabelValues(o)
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// codes are status codes as label values, made once.
var statusLabels = func() [600]string {
	var c [600]string
	for i := range c {
		c[i] = strconv.Itoa(i)
	}
	return c
}()

func code(status int) string {
	if status < 0 || status >= len(statusLabels) {
		return "other"
	}
	return statusLabels[status]
}

func (m *Metrics) observeHTTP(server, route string, status int, took time.Duration) {
	k := httpKey{server, route, status}
	m.mu.RLock()
	kid, ok := m.httpKids[k]
	m.mu.RUnlock()
	if !ok {
		c := code(status)
		kid = httpKid{m.httpRequests.WithLabelValues(server, route, c), m.httpDuration.WithLabelValues(server, route, c)}
		m.mu.Lock()
		m.httpKids[k] = kid
		m.mu.Unlock()
	}
	kid.count.Inc()
	kid.duration.Observe(took.Seconds())
}

// operationLabel bounds an operation name: see MaxOperationNames.
func (m *Metrics) operationLabel(name string) string {
	if name == "" || len(name) > 100 {
		return OtherOperation
	}
	m.mu.RLock()
	_, ok := m.names[name]
	n := len(m.names)
	m.mu.RUnlock()
	if ok {
		return name
	}
	if n >= MaxOperationNames {
		return OtherOperation
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.names) >= MaxOperationNames {
		return OtherOperation
	}
	m.names[name] = struct{}{}
	return name
}

// Operation records a GraphQL operation the router ran (typ: query,
// mutation or subscription; failed: it answered an error status), and names
// it on the request's span.
func (t *Telemetry) Operation(ctx context.Context, name, typ string, failed bool, took time.Duration) {
	if t == nil {
		return
	}
	if typ == "" {
		typ = "query"
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("graphql.operation.name", name), attribute.String("graphql.operation.type", typ))
	}
	m := t.Metrics
	if m == nil {
		return
	}
	result := "ok"
	if failed {
		result = "error"
	}
	k := opKey{m.operationLabel(name), typ, result}
	m.mu.RLock()
	kid, ok := m.opKids[k]
	m.mu.RUnlock()
	if !ok {
		kid = opKid{m.operations.WithLabelValues(k.name, k.typ, k.result), m.opDuration.WithLabelValues(k.name, k.typ, k.result)}
		m.mu.Lock()
		m.opKids[k] = kid
		m.mu.Unlock()
	}
	kid.count.Inc()
	kid.duration.Observe(took.Seconds())
}

// Rejected records an operation refused by a limit (a bounded name: the
// limit's, or "parse" / "validation").
func (t *Telemetry) Rejected(limit string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.limitRejections.WithLabelValues(limit).Inc()
}

// QuotaRefused records a request over a developer key's quota (access.Quotas'
// observer): enforced, it was refused; otherwise measure mode let it through.
func (t *Telemetry) QuotaRefused(policy string, enforced bool) {
	if t == nil || t.Metrics == nil {
		return
	}
	mode := "measure"
	if enforced {
		mode = "enforce"
	}
	t.Metrics.quotaRefusals.WithLabelValues(policy, mode).Inc()
}

// PlanCache records a plan cache look-up.
func (t *Telemetry) PlanCache(hit bool) {
	if t == nil || t.Metrics == nil {
		return
	}
	if hit {
		t.Metrics.planHits.Inc()
	} else {
		t.Metrics.planMisses.Inc()
	}
}

// Credits records credits held, charged or released by a paid route.
func (t *Telemetry) Credits(action string, amount int64) {
	if t == nil || t.Metrics == nil || amount <= 0 {
		return
	}
	t.Metrics.credits.WithLabelValues(action).Add(float64(amount))
}

// ImageFetch records one image fetch's outcome ("ok" or a stable refusal
// code).
func (t *Telemetry) ImageFetch(outcome string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.imageFetches.WithLabelValues(outcome).Inc()
}

// Idempotency records a keyed request that was not run: replayed,
// conflict or in_flight.
func (t *Telemetry) Idempotency(outcome string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.idempotency.WithLabelValues(outcome).Inc()
}

// StoreError records a failed query or readiness check of a store (by its
// name).
func (t *Telemetry) StoreError(store string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.storeErrors.WithLabelValues(store).Inc()
}

// RedisError records a failed Redis command.
func (t *Telemetry) RedisError() {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.redisErrors.Inc()
}

// RedisFallback records whether the in-process fallback serves instead of
// Redis (the breaker of kv/failover is open).
func (t *Telemetry) RedisFallback(on bool) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.redisFallback.Set(map[bool]float64{true: 1}[on])
}
