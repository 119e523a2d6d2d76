package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/logging"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	restshim "github.com/vitolahq/vitola/rest-shim"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
	cataloggraph "github.com/vitolahq/vitola/subgraphs/catalog/graph"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Components `serve --component` runs alone.
var components = append([]string{"router", "shim"}, schema.All...)

type serveSettings struct {
	store storeSettings
	// PublicURL and PaymentsPublicURL are as configured; empty, they follow
	// the address listened on (see publicURL).
	PublicURL    string
	Addr         string
	PaymentsAddr string
	RedisURL     string
	RedisPrefix  string
	InternalKey  string
	Component    string
	RouterConfig string
	RouterURL    string
	SubgraphURLs urlMap
	Demo         bool
	// FetchAllowCIDRs lets the image fetcher reach these non-public ranges.
	FetchAllowCIDRs string
	fetchAllow      []netip.Prefix
	// ImageDecodeMB caps the memory image decoding holds at once, in MiB.
	ImageDecodeMB int
	// CapacityWait bounds a request's wait for room in the decode budget.
	CapacityWait   time.Duration
	VisionModelURL string
	VisionModelKey string
	LogLevel       string
	LogFormat      string
	Limits         limits.Config
	// Quotas per developer key (quotaMode parsed from QuotaMode).
	Quotas    access.QuotaConfig
	QuotaMode string
	// Router performance settings (deduplication, operation cache).
	Tuning router.Tuning
	// Subscriptions bound the router's live subscriptions.
	Subscriptions              router.SubscriptionSettings
	inboundDedup, singleFlight bool
	// PprofAddr serves net/http/pprof on its own listener; empty: off.
	PprofAddr string
	// SubgraphH2C: the router calls subgraphs over HTTP/2 without TLS.
	SubgraphH2C bool
	// Payments settings.
	PaymentsPublicURL string
	PaymentsKEKs      string
	CallbackTimeout   time.Duration
	CallbackMaxAge    time.Duration
	ChargeLease       time.Duration
	StripeAPIURL      string
	// Telemetry and readiness.
	MetricsAddr      string
	OTLPEndpoint     string
	TraceSampleRatio float64
	ReadyTimeout     time.Duration
	// Server bounds every listener: slow clients and connections per address.
	Server platform.ServerLimits
}

// paymentsOptions are the payments settings for the platform, the payments
// origin reached at addr (the address listened on, where the process serves
// it) unless --payments-public-url says otherwise.
func (s *serveSettings) paymentsOptions(addr string) platform.PaymentsOptions {
	return platform.PaymentsOptions{PublicURL: publicURL(s.PaymentsPublicURL, addr), KEKs: s.PaymentsKEKs, CallbackTimeout: s.CallbackTimeout, CallbackMaxAge: s.CallbackMaxAge, ChargeLease: s.ChargeLease, StripeAPIURL: s.StripeAPIURL}
}

func parseServe(args []string, getenv func(string) string) (*serveSettings, error) {
	s := &serveSettings{SubgraphURLs: urlMap{}}
	fs := newFlagSet("serve")
	s.register(fs, getenv)
	if v := getenv("VITOLA_SUBGRAPH_URLS"); v != "" {
		if err := s.SubgraphURLs.Set(v); err != nil {
			return nil, fmt.Errorf("VITOLA_SUBGRAPH_URLS: %w", err)
		}
	}
	if _, err := commandAt("serve").parse(fs, args); err != nil {
		return nil, err
	}
	s.Tuning.NoInboundDedup, s.Tuning.NoSingleFlight = !s.inboundDedup, !s.singleFlight
	if s.Component != "" && !slices.Contains(components, s.Component) {
		return nil, fmt.Errorf("--component %q: want one of %s", s.Component, strings.Join(components, ", "))
	}
	allow, err := imagefetch.ParseCIDRs(s.FetchAllowCIDRs)
	if err != nil {
		return nil, fmt.Errorf("--fetch-allow-cidrs: %w", err)
	}
	s.fetchAllow = allow
	if s.TraceSampleRatio < 0 || s.TraceSampleRatio > 1 {
		return nil, fmt.Errorf("--trace-sample-ratio %v: give a number from 0 to 1", s.TraceSampleRatio)
	}
	if s.ReadyTimeout <= 0 {
		return nil, fmt.Errorf("--ready-timeout %s: give a positive duration, e.g. 2s", s.ReadyTimeout)
	}
	if s.Quotas.Mode, err = access.ParseQuotaMode(s.QuotaMode); err != nil {
		return nil, fmt.Errorf("--quota-mode: %w", err)
	}
	if s.Quotas.Default.RPS < 0 || s.Quotas.Default.CostPerMinute < 0 {
		return nil, errors.New("--quota-rps and --quota-cost-per-minute: give 0 (no quota) or more")
	}
	if s.Server.ReadTimeout <= 0 || s.Server.WriteTimeout <= 0 {
		return nil, fmt.Errorf("--read-timeout %s and --write-timeout %s: give positive durations, e.g. 30s", s.Server.ReadTimeout, s.Server.WriteTimeout)
	}
	if s.Server.MaxConnsPerClient < 0 {
		return nil, fmt.Errorf("--max-conns-per-client %d: give 0 (no cap) or more", s.Server.MaxConnsPerClient)
	}
	if s.CapacityWait <= 0 {
		return nil, fmt.Errorf("--capacity-wait %s: give a positive duration, e.g. 5s", s.CapacityWait)
	}
	if s.ImageDecodeMB < 64 {
		return nil, fmt.Errorf("--image-decode-budget %d: give at least 64 (MiB): a 12-megapixel JPEG alone needs about 40", s.ImageDecodeMB)
	}
	return s, nil
}

// register declares every serve setting as a flag whose default is read from its
// environment variable.
func (s *serveSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	s.store.register(fs, getenv)
	registerPublicURL(fs, &s.PublicURL, getenv)
	fs.StringVar(&s.Addr, "addr", envOr(getenv, "VITOLA_ADDR", defaultAddr), "address of the public API: /graphql, REST, /health, /docs (env VITOLA_ADDR); with --component, that component's address")
	fs.StringVar(&s.PaymentsAddr, "payments-addr", envOr(getenv, "VITOLA_PAYMENTS_ADDR", "127.0.0.1:8081"), "address of the payments origin (env VITOLA_PAYMENTS_ADDR)")
	fs.StringVar(&s.PaymentsPublicURL, "payments-public-url", envOr(getenv, "VITOLA_PAYMENTS_PUBLIC_URL", ""), "the payments origin's public URL, as backends and browsers reach it: hosted checkout links and the assertion audience ({URL}/api/v1); default: http:// and the address --payments-addr listens on (env VITOLA_PAYMENTS_PUBLIC_URL)")
	fs.DurationVar(&s.CallbackTimeout, "callback-timeout", envDuration(getenv, "VITOLA_CALLBACK_TIMEOUT", 15*time.Second), "fulfillment callbacks: how long one delivery may take before it is retried (env VITOLA_CALLBACK_TIMEOUT)")
	fs.DurationVar(&s.ChargeLease, "charge-lease", envDuration(getenv, "VITOLA_CHARGE_LEASE", 2*time.Minute), "payments: how long a charge attempt is one replica's before another repeats it under the same gateway key; longer than a gateway call takes (env VITOLA_CHARGE_LEASE)")
	fs.DurationVar(&s.CallbackMaxAge, "callback-max-age", envDuration(getenv, "VITOLA_CALLBACK_MAX_AGE", 72*time.Hour), "fulfillment callbacks: how long an unacknowledged event is retried (env VITOLA_CALLBACK_MAX_AGE)")
	secretVar(fs, &s.PaymentsKEKs, "payments-keks", "VITOLA_PAYMENTS_KEKS", getenv, "key-encryption keys that seal gateway credentials and card references, ID:BASE64KEY (32 bytes) comma-separated, the first one current; default: one derived from the internal key (env VITOLA_PAYMENTS_KEKS)")
	fs.StringVar(&s.StripeAPIURL, "stripe-api-url", envOr(getenv, "VITOLA_STRIPE_API_URL", ""), "the Stripe API's base URL for merchant accounts on the stripe gateway: https, or http on loopback (stripe-mock); default: Stripe's own, https://api.stripe.com (env VITOLA_STRIPE_API_URL)")
	secretVar(fs, &s.RedisURL, "redis-url", "REDIS_URL", getenv, "Redis URL (redis://…) for state shared by replicas; empty: in-process. While Redis is unreachable, at start too, each replica keeps that state in its own process until Redis answers (env REDIS_URL)")
	fs.StringVar(&s.RedisPrefix, "redis-prefix", envOr(getenv, "VITOLA_REDIS_PREFIX", "vitola:"), "prefix of every Redis key (env VITOLA_REDIS_PREFIX)")
	secretVar(fs, &s.InternalKey, "internal-key", "VITOLA_INTERNAL_KEY", getenv, "key (32+ characters) signing internal calls between components; default: generated into the data directory; in scale-out, required and the same in every process (env VITOLA_INTERNAL_KEY)")
	fs.StringVar(&s.Component, "component", envOr(getenv, "VITOLA_COMPONENT", ""), "run one component alone: "+strings.Join(components, ", ")+"; empty: all in one process (env VITOLA_COMPONENT)")
	fs.StringVar(&s.RouterConfig, "router-config", envOr(getenv, "VITOLA_ROUTER_CONFIG", ""), "router: a wgc-composed router config to serve instead of Vitola's own (env VITOLA_ROUTER_CONFIG)")
	fs.StringVar(&s.RouterURL, "router-url", envOr(getenv, "VITOLA_ROUTER_URL", "http://127.0.0.1:8090/graphql"), "shim: the router's /graphql URL (env VITOLA_ROUTER_URL)")
	fs.Var(s.SubgraphURLs, "subgraph-url", "NAME=URL of a subgraph's /graphql, repeatable or comma-separated; the router needs every public subgraph's, the shim those it calls (catalog, users, payments, matching), the catalog users' and venues' for node(id:) (env VITOLA_SUBGRAPH_URLS)")
	fs.BoolVar(&s.Demo, "demo", envBool(getenv, "VITOLA_DEMO"), "seed demo data and a demo developer key into empty stores (env VITOLA_DEMO)")
	fs.StringVar(&s.VisionModelURL, "vision-model-url", envOr(getenv, "VITOLA_VISION_MODEL_URL", ""), "identify: a vision-model vendor's endpoint (POST {imageUrls, prompt} → {brand, name}), asked in the thorough profile when the rest is not conclusive; https, or http on loopback only; empty: off (env VITOLA_VISION_MODEL_URL)")
	secretVar(fs, &s.VisionModelKey, "vision-model-key", "VITOLA_VISION_MODEL_KEY", getenv, "identify: the vision-model vendor's API key, sent as a bearer token (env VITOLA_VISION_MODEL_KEY)")
	fs.StringVar(&s.FetchAllowCIDRs, "fetch-allow-cidrs", envOr(getenv, "VITOLA_FETCH_ALLOW_CIDRS", ""), "image fetching: comma-separated address ranges (e.g. 10.0.0.0/8) that may be fetched although not public, for private deployments; empty: public addresses only (env VITOLA_FETCH_ALLOW_CIDRS)")
	fs.IntVar(&s.ImageDecodeMB, "image-decode-budget", envInt(getenv, "VITOLA_IMAGE_DECODE_BUDGET", imagefetch.DefaultDecodeBudget>>20), "image matching: MiB that decoding images (and fingerprinting them) may hold at once; an image needing more is refused (env VITOLA_IMAGE_DECODE_BUDGET)")
	fs.DurationVar(&s.CapacityWait, "capacity-wait", envDuration(getenv, "VITOLA_CAPACITY_WAIT", imagefetch.DefaultCapacityWait), "image matching: how long a request waits for room in the decode budget while other requests' images fill it; then it is answered 503 over_capacity with Retry-After (these seconds, rounded up), is charged nothing and may be retried with the same Idempotency-Key (env VITOLA_CAPACITY_WAIT)")
	fs.StringVar(&s.MetricsAddr, "metrics-addr", envOr(getenv, "VITOLA_METRICS_ADDR", ""), "address of a listener of its own serving Prometheus metrics at /metrics, never on the public origins (e.g. 127.0.0.1:9090); empty: no metrics (env VITOLA_METRICS_ADDR)")
	secretVar(fs, &s.OTLPEndpoint, "otlp-endpoint", "VITOLA_OTLP_ENDPOINT", getenv, "an OpenTelemetry collector's OTLP/HTTP URL (e.g. http://127.0.0.1:4318; /v1/traces is added to a URL without a path) to send traces to; empty: no tracing (env VITOLA_OTLP_ENDPOINT)")
	fs.Float64Var(&s.TraceSampleRatio, "trace-sample-ratio", envFloat(getenv, "VITOLA_TRACE_SAMPLE_RATIO", 1), "share of new traces recorded, 0 to 1; a request carrying a traceparent follows its caller's decision (env VITOLA_TRACE_SAMPLE_RATIO)")
	fs.DurationVar(&s.ReadyTimeout, "ready-timeout", envDuration(getenv, "VITOLA_READY_TIMEOUT", restshim.DefaultReadyTimeout), "how long /health/ready waits for its checks (stores, Redis, subgraphs) before it answers 503 (env VITOLA_READY_TIMEOUT)")
	fs.StringVar(&s.LogLevel, "log-level", envOr(getenv, "VITOLA_LOG_LEVEL", "info"), "debug, info, warn or error (env VITOLA_LOG_LEVEL)")
	fs.StringVar(&s.LogFormat, "log-format", envOr(getenv, "VITOLA_LOG_FORMAT", "auto"), "json, console, or auto: console on a terminal (env VITOLA_LOG_FORMAT)")
	fs.Int64Var(&s.Quotas.Default.RPS, "quota-rps", envInt64(getenv, "VITOLA_QUOTA_RPS", 50), "quotas: requests per second a developer key may send (as a burst, then at that rate), unless the key has its own (vitola keys limits set); 0: no quota (env VITOLA_QUOTA_RPS)")
	fs.Int64Var(&s.Quotas.Default.CostPerMinute, "quota-cost-per-minute", envInt64(getenv, "VITOLA_QUOTA_COST_PER_MINUTE", 60000), "quotas: GraphQL cost (as --max-cost measures it) a developer key may spend per minute, unless the key has its own; 0: no quota (env VITOLA_QUOTA_COST_PER_MINUTE)")
	fs.StringVar(&s.QuotaMode, "quota-mode", envOr(getenv, "VITOLA_QUOTA_MODE", string(access.QuotaEnforce)), "quotas: enforce (refuse with 429), measure (log and count what would be refused, refuse nothing) or off (env VITOLA_QUOTA_MODE)")
	lim := limits.Defaults()
	fs.IntVar(&s.Limits.MaxDepth, "max-depth", envInt(getenv, "VITOLA_MAX_DEPTH", lim.MaxDepth), "GraphQL: maximum depth (env VITOLA_MAX_DEPTH)")
	fs.IntVar(&s.Limits.MaxAliases, "max-aliases", envInt(getenv, "VITOLA_MAX_ALIASES", lim.MaxAliases), "GraphQL: maximum aliases (env VITOLA_MAX_ALIASES)")
	fs.IntVar(&s.Limits.MaxRootFields, "max-root-fields", envInt(getenv, "VITOLA_MAX_ROOT_FIELDS", lim.MaxRootFields), "GraphQL: maximum root fields (env VITOLA_MAX_ROOT_FIELDS)")
	fs.IntVar(&s.Limits.MaxCost, "max-cost", envInt(getenv, "VITOLA_MAX_COST", lim.MaxCost), "GraphQL: maximum calculated cost (env VITOLA_MAX_COST)")
	fs.IntVar(&s.Limits.MaxBodyBytes, "max-body-bytes", envInt(getenv, "VITOLA_MAX_BODY_BYTES", lim.MaxBodyBytes), "GraphQL: largest /graphql request body in bytes, refused with 413 (env VITOLA_MAX_BODY_BYTES)")
	fs.IntVar(&s.Limits.MaxQueryBytes, "max-query-bytes", envInt(getenv, "VITOLA_MAX_QUERY_BYTES", lim.MaxQueryBytes), "GraphQL: longest operation text in bytes, refused before parsing (env VITOLA_MAX_QUERY_BYTES)")
	fs.IntVar(&s.Limits.MaxTokens, "max-tokens", envInt(getenv, "VITOLA_MAX_TOKENS", lim.MaxTokens), "GraphQL: most tokens in an operation, and in a request's JSON, refused before parsing (env VITOLA_MAX_TOKENS)")
	fs.IntVar(&s.Limits.MaxNesting, "max-nesting", envInt(getenv, "VITOLA_MAX_NESTING", lim.MaxNesting), "GraphQL: deepest nesting of brackets ({ [ ( together) in an operation, and of arrays and objects in a request's JSON, refused before parsing (env VITOLA_MAX_NESTING)")
	fs.BoolVar(&s.inboundDedup, "inbound-dedup", envBoolOr(getenv, "VITOLA_INBOUND_DEDUP", true), "router: identical queries in flight at once (same operation, variables and caller) share one execution (env VITOLA_INBOUND_DEDUP)")
	fs.BoolVar(&s.singleFlight, "single-flight", envBoolOr(getenv, "VITOLA_SINGLE_FLIGHT", true), "router: identical subgraph fetches in flight at once are made once (env VITOLA_SINGLE_FLIGHT)")
	fs.IntVar(&s.Tuning.OperationCacheSize, "operation-cache-size", envInt(getenv, "VITOLA_OPERATION_CACHE_SIZE", router.DefaultOperationCacheSize), "router: how many prepared (normalized, validated, analysed, planned) operations are kept (env VITOLA_OPERATION_CACHE_SIZE)")
	subs := router.DefaultSubscriptionSettings()
	fs.IntVar(&s.Subscriptions.PerKey, "subscriptions-per-key", envInt(getenv, "VITOLA_SUBSCRIPTIONS_PER_KEY", subs.PerKey), "router: live subscriptions one developer key may hold open on one replica, over every connection and protocol; a publishable key, from each client address (env VITOLA_SUBSCRIPTIONS_PER_KEY)")
	fs.IntVar(&s.Subscriptions.PerConnection, "subscriptions-per-connection", envInt(getenv, "VITOLA_SUBSCRIPTIONS_PER_CONNECTION", subs.PerConnection), "router: subscriptions one WebSocket connection may hold open (env VITOLA_SUBSCRIPTIONS_PER_CONNECTION)")
	fs.DurationVar(&s.Subscriptions.Heartbeat, "subscription-heartbeat", envDuration(getenv, "VITOLA_SUBSCRIPTION_HEARTBEAT", subs.Heartbeat), "router: how often an open subscription stream is kept alive: a WebSocket ping, an SSE comment (env VITOLA_SUBSCRIPTION_HEARTBEAT)")
	fs.DurationVar(&s.Subscriptions.InitTimeout, "subscription-init-timeout", envDuration(getenv, "VITOLA_SUBSCRIPTION_INIT_TIMEOUT", subs.InitTimeout), "router: how long a WebSocket may wait before connection_init; then it is closed with 4408 (env VITOLA_SUBSCRIPTION_INIT_TIMEOUT)")
	fs.IntVar(&s.Subscriptions.SendBuffer, "subscription-send-buffer", envInt(getenv, "VITOLA_SUBSCRIPTION_SEND_BUFFER", subs.SendBuffer), "router: events that may wait for a slow client; one more drops its subscription (WebSocket close 4410, SSE a SLOW_CONSUMER error) (env VITOLA_SUBSCRIPTION_SEND_BUFFER)")
	fs.DurationVar(&s.Subscriptions.SendTimeout, "subscription-send-timeout", envDuration(getenv, "VITOLA_SUBSCRIPTION_SEND_TIMEOUT", subs.SendTimeout), "router: how long one write to a subscribed client may take before its stream is closed (env VITOLA_SUBSCRIPTION_SEND_TIMEOUT)")
	fs.BoolVar(&s.SubgraphH2C, "subgraph-h2c", envBool(getenv, "VITOLA_SUBGRAPH_H2C"), "router: call subgraphs over HTTP/2 without TLS (h2c, prior knowledge); every subgraph must accept it, as Vitola's do (env VITOLA_SUBGRAPH_H2C)")
	fs.DurationVar(&s.Server.ReadTimeout, "read-timeout", envDuration(getenv, "VITOLA_READ_TIMEOUT", platform.DefaultReadTimeout), "every listener: time to read a whole request, header and body; a body still arriving then is answered 408 and its connection closed (env VITOLA_READ_TIMEOUT)")
	fs.DurationVar(&s.Server.WriteTimeout, "write-timeout", envDuration(getenv, "VITOLA_WRITE_TIMEOUT", platform.DefaultWriteTimeout), "every listener: time to answer a request, from the end of its header; the paid image routes take their own 90 s deadline beyond it (env VITOLA_WRITE_TIMEOUT)")
	fs.IntVar(&s.Server.MaxConnsPerClient, "max-conns-per-client", envInt(getenv, "VITOLA_MAX_CONNS_PER_CLIENT", platform.DefaultMaxConnsPerClient), "public listeners (API, payments, metrics, profiler): connections one client address may hold open at once, the next answered 503; behind a reverse proxy every client has the proxy's address: raise it or give 0 (no cap) (env VITOLA_MAX_CONNS_PER_CLIENT)")
	fs.StringVar(&s.PprofAddr, "pprof-addr", envOr(getenv, "VITOLA_PPROF_ADDR", ""), "serve Go's profiler (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; empty: off (env VITOLA_PPROF_ADDR)")
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	s, err := parseServe(args, getenv)
	if err != nil {
		return err
	}
	log, err := logging.New(stderr, s.LogLevel, s.LogFormat)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if err := startPprof(ctx, s.PprofAddr, s.Server, log); err != nil {
		return err
	}
	service := "vitola"
	if s.Component != "" {
		service += "-" + s.Component
	}
	tel, err := telemetry.New(ctx, telemetry.Options{Metrics: s.MetricsAddr != "", OTLPEndpoint: s.OTLPEndpoint, SampleRatio: s.TraceSampleRatio, Service: service, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		// Send the spans still buffered before exiting.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		tel.Close(cctx)
	}()
	switch s.Component {
	case "":
		return serveAll(ctx, s, tel, log, stdout)
	case "router":
		return serveRouter(ctx, s, tel, log)
	case "shim":
		return serveShim(ctx, s, tel, log)
	default:
		return serveSubgraph(ctx, s, tel, log)
	}
}

// metricsListener is the --metrics-addr listener (none when it is empty):
// /metrics alone, on an address of its own.
func (s *serveSettings) metricsListener(tel *telemetry.Telemetry) []*listener {
	if s.MetricsAddr == "" || tel.Metrics == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.Metrics.Handler())
	return []*listener{{name: "metrics", addr: s.MetricsAddr, handler: mux}}
}

// hostNames names internal services by the host of their URL (name=URL), for
// telemetry.
func hostNames(urls map[string]string) map[string]string {
	names := map[string]string{}
	for name, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			names[u.Host] = name
		}
	}
	return names
}

// remoteReady checks other components' readiness (name=URL of their
// /graphql) from their /health/ready.
func remoteReady(urls map[string]string, only []string) []restshim.Check {
	var checks []restshim.Check
	for name, u := range urls {
		if only == nil || slices.Contains(only, name) {
			checks = append(checks, restshim.Check{Name: name, Check: remoteHealth(strings.TrimSuffix(u, "/graphql") + "/health/ready")})
		}
	}
	return checks
}

// serveAll runs every component in one process.
func serveAll(ctx context.Context, s *serveSettings, tel *telemetry.Telemetry, log zerolog.Logger, stdout io.Writer) error {
	key, err := internalKey(s.InternalKey, s.store, true)
	if err != nil {
		return err
	}
	api, pay := &listener{name: "api", addr: s.Addr}, &listener{name: "payments", addr: s.PaymentsAddr}
	all := append([]*listener{api, pay}, s.metricsListener(tel)...)
	if err := listen(all...); err != nil {
		return err
	}
	defer closeListeners(all...) // when start-up fails; serve closes them otherwise
	publicURL, payments := publicURL(s.PublicURL, api.bound()), s.paymentsOptions(pay.bound())
	logPublicURLs(log, publicURL, payments.PublicURL)
	p, err := platform.Open(ctx, platform.Options{
		Store: s.store.config(), RedisURL: s.RedisURL, RedisPrefix: s.RedisPrefix, InternalKey: key,
		Demo: s.Demo, DemoKeyOut: stdout, Limits: s.Limits, Quotas: &s.Quotas, RouterTuning: s.Tuning, Logger: log, PublicURL: publicURL, FetchAllow: s.fetchAllow, ImageDecodeBudget: int64(s.ImageDecodeMB) << 20, CapacityWait: s.CapacityWait,
		VisionModelURL: s.VisionModelURL, VisionModelKey: s.VisionModelKey, Payments: payments,
		Telemetry: tel, ReadyTimeout: s.ReadyTimeout, Subscriptions: s.Subscriptions,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	api.handler, pay.handler = p.API, p.Payments
	api.onShutdown = p.Router.Shutdown
	return serve(ctx, log, s.Server, all...)
}

// serveRouter runs the router alone, over Vitola's composition or any other.
func serveRouter(ctx context.Context, s *serveSettings, tel *telemetry.Telemetry, log zerolog.Logger) error {
	raw := schema.RouterConfig
	if s.RouterConfig != "" {
		b, err := os.ReadFile(s.RouterConfig)
		if err != nil {
			return fmt.Errorf("--router-config: %w", err)
		}
		raw = b
	}
	composed, err := router.LoadComposed(raw, s.SubgraphURLs)
	if err != nil {
		return err
	}
	composed.SeparateCallers(schema.Subgraphs...)
	key, err := internalKey(s.InternalKey, s.store, false)
	if err != nil {
		return err
	}
	issuer, _ := trust.NewIssuer(key, "router")
	keys, accessStore, err := platform.OpenAccess(ctx, s.store.config())
	if err != nil {
		return err
	}
	defer accessStore.Close()
	client := &http.Client{Transport: platform.InternalTransport(tel, "router", hostNames(composed.Subgraphs), router.SubgraphTransport(s.SubgraphH2C), issuer, platform.SignedHosts(composed.Subgraphs))}
	var tokens *access.Tokens // access tokens need Vitola's users subgraph
	if u, ok := s.SubgraphURLs[schema.Users]; ok && s.RouterConfig == "" {
		tokens = access.NewTokens(s.componentPublicURL(log), restshim.FetchJWKS(&subgraph.Client{HTTP: client, URL: u}))
	}
	verifier, _ := trust.NewVerifier(key)
	kvs, err := platform.OpenKV(ctx, s.RedisURL, s.RedisPrefix, tel, log)
	if err != nil {
		return err
	}
	defer kvs.Close()
	quotas := access.NewQuotas(kvs, s.Quotas, log)
	quotas.Observe(tel.QuotaRefused)
	// Automatic persisted queries are shared by the router's replicas through
	// Redis; without it each keeps its own, bounded.
	var apq kv.Store
	if s.RedisURL != "" {
		apq = kvs
	}
	subs := s.Subscriptions
	if s.RouterConfig == "" { // a foreign composition's fields are not Vitola's to open to websites
		subs.PublicFields = platform.PublicSubscriptions
	}
	rt, err := router.New(ctx, router.Config{Composed: composed, Client: client, Keys: keys, Tokens: tokens, Internal: verifier, Limits: s.Limits, Quotas: quotas, Tuning: s.Tuning, Logger: log,
		PersistedQueries: apq, Documents: accessStore, Subscriptions: subs, Origins: keys})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", rt)
	mux.Handle("/graphql/assets/", rt)
	mux.Handle("GET /health", restshim.HealthHandler())
	// Ready: the key store and Redis (the quotas') answer, and so does each
	// of Vitola's subgraphs
	// (a foreign composition's subgraphs need not serve /health/ready).
	checks := append([]restshim.Check{{Name: "access", Check: keys.Ping}, {Name: "kv", Check: kvs.Ping}}, remoteReady(composed.Subgraphs, schema.Subgraphs)...)
	mux.Handle("GET /health/ready", restshim.ReadyHandler(checks, s.ReadyTimeout, nil))
	log.Info().Interface("subgraphs", redactURLs(composed.Subgraphs)).Msg("router")
	return listenAndServe(ctx, log, s.Server, append([]*listener{{name: "router", addr: s.Addr, internal: true, handler: tel.Handler("router", mux), onShutdown: rt.Shutdown}}, s.metricsListener(tel)...)...)
}

// serveShim runs the public edge alone; /graphql goes to the router over HTTP.
func serveShim(ctx context.Context, s *serveSettings, tel *telemetry.Telemetry, log zerolog.Logger) error {
	routerURL, err := url.Parse(s.RouterURL)
	if err != nil || routerURL.Host == "" {
		return fmt.Errorf("--router-url %q is not a URL", s.RouterURL)
	}
	kvs, err := platform.OpenKV(ctx, s.RedisURL, s.RedisPrefix, tel, log)
	if err != nil {
		return err
	}
	defer kvs.Close()
	keys, accessStore, err := platform.OpenAccess(ctx, s.store.config())
	if err != nil {
		return err
	}
	defer accessStore.Close()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: routerURL.Scheme, Host: routerURL.Host})
			pr.SetXForwarded()
		},
		Transport: tel.Transport("shim", map[string]string{routerURL.Host: "router"}, newHTTPTransport()),
	}
	// Ready: the key store and Redis answer, the router serves, and each
	// subgraph is ready (its store answers).
	checks := []restshim.Check{{Name: "access", Check: keys.Ping}, {Name: "kv", Check: kvs.Ping},
		{Name: "router", Check: remoteHealth(strings.TrimSuffix(s.RouterURL, "/graphql") + "/health")}}
	checks = append(checks, remoteReady(s.SubgraphURLs, nil)...)
	catalogURL, okC := s.SubgraphURLs[schema.Catalog]
	usersURL, okU := s.SubgraphURLs[schema.Users]
	paymentsGraphQL, okP := s.SubgraphURLs[schema.Payments]
	matchingURL, okM := s.SubgraphURLs[schema.Matching]
	if !okC || !okU || !okP || !okM {
		return fmt.Errorf("the shim needs the URLs of the subgraphs it calls: --subgraph-url catalog=http://HOST:PORT/graphql,users=…,payments=…,matching=…")
	}
	key, err := internalKey(s.InternalKey, s.store, false)
	if err != nil {
		return err
	}
	issuer, _ := trust.NewIssuer(key, "shim")
	targets := hostNames(s.SubgraphURLs)
	targets[routerURL.Host] = "router"
	internal := &http.Client{Timeout: 30 * time.Second, Transport: platform.InternalTransport(tel, "shim", targets, newHTTPTransport(), issuer, nil)}
	// Identify may take up to the shim's paid deadline (90 s: fetches,
	// fingerprints, a vision model); matching calls get a cap above it.
	slowInternal := &http.Client{Timeout: 100 * time.Second, Transport: internal.Transport}
	usersClient := &subgraph.Client{HTTP: internal, URL: usersURL}
	idem := idempotency.New(accessStore.Idempotency())
	api, pay := &listener{name: "api", addr: s.Addr}, &listener{name: "payments", addr: s.PaymentsAddr}
	all := append([]*listener{api, pay}, s.metricsListener(tel)...)
	if err := listen(all...); err != nil {
		return err
	}
	defer closeListeners(all...)
	publicURL, paymentsURL := publicURL(s.PublicURL, api.bound()), s.paymentsOptions(pay.bound()).PublicURL
	logPublicURLs(log, publicURL, paymentsURL)
	onCheckFailed := func(name string) {
		if name != "kv" && name != "router" && !slices.Contains(schema.All, name) {
			tel.StoreError(name)
		}
	}
	quotas := access.NewQuotas(kvs, s.Quotas, log)
	quotas.Observe(tel.QuotaRefused)
	api.handler = tel.EdgeHandler("api", restshim.NewServer(restshim.Deps{
		GraphQL: router.KeepStreams(proxy), Keys: keys, Origins: keys, Catalog: &subgraph.Client{HTTP: internal, URL: catalogURL},
		Payments: &subgraph.Client{HTTP: internal, URL: paymentsGraphQL},
		Matching: &subgraph.Client{HTTP: slowInternal, URL: matchingURL}, Idempotency: idem,
		Router: &subgraph.Client{HTTP: internal, URL: s.RouterURL},
		Users:  usersClient, Tokens: access.NewTokens(publicURL, restshim.FetchJWKS(usersClient)),
		PublicURL: publicURL, CookieKey: platform.CookieKey(key), KV: kvs, Quotas: quotas,
		OpenAPI: schema.OpenAPI, Checks: checks, ReadyTimeout: s.ReadyTimeout, OnCheckFailed: onCheckFailed, Logger: log,
	}))
	pay.handler = tel.EdgeHandler("payments", restshim.NewPaymentsServer(restshim.Deps{
		Payments: &subgraph.Client{HTTP: internal, URL: paymentsGraphQL}, Idempotency: idem,
		PaymentsPublicURL: paymentsURL, PaymentsOpenAPI: schema.PaymentsOpenAPI, CookieKey: platform.CookieKey(key),
		Checks:       append(checks[:2:2], restshim.Check{Name: schema.Payments, Check: remoteHealth(strings.TrimSuffix(paymentsGraphQL, "/graphql") + "/health/ready")}),
		ReadyTimeout: s.ReadyTimeout, OnCheckFailed: onCheckFailed, Logger: log,
	}))
	return serve(ctx, log, s.Server, all...)
}

// serveSubgraph runs one subgraph alone: its /graphql answers only calls with an
// internal token.
func serveSubgraph(ctx context.Context, s *serveSettings, tel *telemetry.Telemetry, log zerolog.Logger) error {
	key, err := internalKey(s.InternalKey, s.store, false)
	if err != nil {
		return err
	}
	verifier, _ := trust.NewVerifier(key)
	var prober cataloggraph.Prober
	if s.Component == schema.Catalog {
		issuer, _ := trust.NewIssuer(key, schema.Catalog)
		prober = platform.EntityProber(platform.InternalTransport(tel, s.Component, hostNames(s.SubgraphURLs), newHTTPTransport(), issuer, nil), s.SubgraphURLs)
	}
	var catalogClient *subgraph.Client
	if u, ok := s.SubgraphURLs[schema.Catalog]; ok && s.Component == schema.Matching {
		issuer, _ := trust.NewIssuer(key, schema.Matching)
		catalogClient = &subgraph.Client{URL: u, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: platform.InternalTransport(tel, s.Component, hostNames(s.SubgraphURLs), newHTTPTransport(), issuer, nil)}}
	}
	sg, err := platform.OpenSubgraph(ctx, s.Component, s.store.config(), platform.SubgraphOptions{Demo: s.Demo, Prober: prober, Secret: key, PublicURL: s.componentPublicURL(log),
		FetchAllow: s.fetchAllow, ImageDecodeBudget: int64(s.ImageDecodeMB) << 20, CapacityWait: s.CapacityWait, Catalog: catalogClient, VisionModelURL: s.VisionModelURL, VisionModelKey: s.VisionModelKey, Payments: s.paymentsOptions(s.PaymentsAddr), Logger: log,
		RedisURL: s.RedisURL, RedisPrefix: s.RedisPrefix, Metrics: platform.MetricsRegistry(tel)})
	if err != nil {
		return err
	}
	defer sg.Store.Close()
	if sg.Live != nil { // shutting down: end the subscriptions first, with a reason
		context.AfterFunc(ctx, func() { sg.Live.Close() })
	}
	h := tel.Handler(s.Component, subgraph.Handler(s.Component, sg.GraphQL, verifier, sg.Store, sg.Routes...))
	return listenAndServe(ctx, log, s.Server, append([]*listener{{name: s.Component, addr: s.Addr, h2c: true, internal: true, handler: h}}, s.metricsListener(tel)...)...)
}

func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // internal calls never go through an environment proxy
	t.MaxIdleConnsPerHost = 256
	return t
}

// remoteHealth checks a component's health URL answers 200 (the readiness
// check's context bounds it).
func remoteHealth(u string) func(ctx context.Context) error {
	client := &http.Client{Transport: newHTTPTransport()}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %d", u, res.StatusCode)
		}
		return nil
	}
}

// componentPublicURL is the public API's URL for a component other than the
// shim: its --addr is its own, not the public API's, so without --public-url
// it takes the default address's (compose.yaml gives every component one).
func (s *serveSettings) componentPublicURL(log zerolog.Logger) string {
	u := publicURL(s.PublicURL, defaultAddr)
	log.Info().Str("publicUrl", u).Msg("public URL")
	return u
}

// logPublicURLs says at start where the public API and the payments origin
// are reached: OAuth's issuer and audience, checkout links.
func logPublicURLs(log zerolog.Logger, api, payments string) {
	log.Info().Str("publicUrl", api).Str("paymentsPublicUrl", payments).Msg("public URLs")
}

// internalWriteTimeout is the least write timeout of a component's own
// listener: longer than any component waits for another (the shim's 100 s
// for an identify in matching).
const internalWriteTimeout = 2 * time.Minute

// listener is one address served: listen binds it, serve serves handler there.
type listener struct {
	name    string
	addr    string // as configured
	handler http.Handler
	ln      net.Listener
	// h2c: accept HTTP/2 without TLS too (subgraphs, for --subgraph-h2c).
	h2c bool
	// internal: its clients are the platform's own components (the router
	// and subgraphs served alone), many connections from one address by
	// design, so no cap on connections per client address applies, and its
	// write timeout is at least internalWriteTimeout.
	internal bool
	// onShutdown runs when the server starts shutting down: the router's
	// Shutdown ends its streams, which the server does not track.
	onShutdown func()
}

// bound is the address actually listened on (port 0 becomes the port given).
func (l *listener) bound() string { return l.ln.Addr().String() }

// listen binds every address before anything serves: a taken port fails
// start-up cleanly, and what is built next knows the addresses bound.
func listen(ls ...*listener) error {
	for i, l := range ls {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeListeners(ls[:i]...)
			return fmt.Errorf("listen on %s (%s): %w", l.addr, l.name, err)
		}
		l.ln = ln
	}
	return nil
}

// closeListeners closes the listeners bound (again is harmless: serve's
// shutdown has closed them already).
func closeListeners(ls ...*listener) {
	for _, l := range ls {
		if l.ln != nil {
			l.ln.Close()
		}
	}
}

// listenAndServe binds and serves listeners whose handlers need not know the
// address.
func listenAndServe(ctx context.Context, log zerolog.Logger, lim platform.ServerLimits, ls ...*listener) error {
	if err := listen(ls...); err != nil {
		return err
	}
	return serve(ctx, log, lim, ls...)
}

// serve serves every bound listener, within lim, until ctx ends, then shuts
// them down gracefully.
func serve(ctx context.Context, log zerolog.Logger, lim platform.ServerLimits, ls ...*listener) error {
	var servers []*http.Server
	errc := make(chan error, len(ls))
	for _, l := range ls {
		own := lim
		if l.internal {
			// The callers bound their own calls (the shim waits up to 100 s
			// for matching's identify), so the listener must outlast them.
			own.MaxConnsPerClient, own.WriteTimeout = 0, max(own.WriteTimeout, internalWriteTimeout)
		}
		srv := platform.HTTPServer(l.handler, own)
		if l.onShutdown != nil {
			srv.RegisterOnShutdown(l.onShutdown)
		}
		if l.h2c {
			router.AcceptH2C(srv)
		}
		servers = append(servers, srv)
		log.Info().Str("component", l.name).Str("addr", "http://"+l.bound()).Msg("listening")
		go func() {
			if err := platform.Serve(srv, l.ln, own.MaxConnsPerClient); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", l.name, err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(sctx)
	}
	return err
}

// redactURLs hides any password in URLs before they are logged.
func redactURLs(urls map[string]string) map[string]string {
	out := make(map[string]string, len(urls))
	for name, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			raw = u.Redacted()
		}
		out[name] = raw
	}
	return out
}
