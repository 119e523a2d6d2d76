// Package platform assembles Vitola's components: the whole platform in one
// process (the embedded default), and the pieces each scale-out component opens on
// its own. The vitola binary and the tests both build on it.
package platform

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	accesssql "github.com/vitolahq/vitola/access/sqlstore"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/failover"
	"github.com/vitolahq/vitola/internal/kv/memory"
	kvredis "github.com/vitolahq/vitola/internal/kv/redis"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
	restshim "github.com/vitolahq/vitola/rest-shim"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// Options configure the one-process platform.
type Options struct {
	Store       sqldb.Config
	RedisURL    string // empty: in-process kv
	RedisPrefix string
	InternalKey []byte
	Demo        bool
	// PublicURL is the API's public base URL: the OAuth issuer.
	PublicURL string
	// DemoKeyOut receives the demo developer key the first time it is made.
	DemoKeyOut io.Writer
	Limits     limits.Config
	// RouterTuning: the router's deduplication and operation cache settings.
	RouterTuning router.Tuning
	// Subscriptions bound the router's live subscriptions (zero: defaults;
	// PublicFields is set here).
	Subscriptions router.SubscriptionSettings
	Logger        zerolog.Logger
	// FetchAllow are address ranges the image fetcher may reach although not
	// public (private deployments, tests).
	FetchAllow []netip.Prefix
	// ImageDecodeBudget caps the bytes image decoding holds at once (0: the
	// default, imagefetch.DefaultDecodeBudget).
	ImageDecodeBudget int64
	// CapacityWait bounds a request's wait for the decode budget before it
	// is refused with over_capacity (0: imagefetch.DefaultCapacityWait).
	CapacityWait time.Duration
	// VisionModelURL and VisionModelKey configure identify's optional vision
	// model (empty URL: off).
	VisionModelURL, VisionModelKey string
	// Payments configures the payments subgraph and origin.
	Payments PaymentsOptions
	// Quotas are the developer keys' quotas (nil: none).
	Quotas *access.QuotaConfig
	// WrapSubgraphTransport, when set, wraps the router's transport to the
	// subgraphs (tests count the calls through it).
	WrapSubgraphTransport func(http.RoundTripper) http.RoundTripper
	// WrapShimTransport, when set, wraps the shim's transport to the
	// subgraphs (tests break the ledger's answers with it).
	WrapShimTransport func(http.RoundTripper) http.RoundTripper
	// Telemetry reports metrics and traces (nil: none).
	Telemetry *telemetry.Telemetry
	// ReadyTimeout bounds /health/ready's checks (0: the default).
	ReadyTimeout time.Duration
}

// Platform is every component in one process.
type Platform struct {
	// API serves {base_url}; Payments serves {payments_origin}.
	API      http.Handler
	Payments http.Handler
	Keys     *access.Service
	// Credits is the payments subgraph's ledger (operators grant credits).
	Credits payments.Ledger
	// PaymentsService is the payments subgraph's domain (tests and admin
	// commands in process).
	PaymentsService *payments.Service
	// PaymentsSender delivers fulfillment callbacks (it also runs by itself).
	PaymentsSender *payments.Sender
	// Subgraphs are the subgraph components' handlers (internal-token check
	// included), by name.
	Subgraphs map[string]http.Handler
	// Idempotency keeps the paid routes' Idempotency-Key records.
	Idempotency *idempotency.Service
	// Images is the matching subgraph's image fetcher, whose decode budget
	// every request's images share (tests hold it to fill it).
	Images *imagefetch.Fetcher
	// Router is the federation router (its counters, for tests and benchmarks).
	Router  *router.Router
	closers []io.Closer
}

// Close releases every store.
func (p *Platform) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i].Close()
	}
}

// InternalHost is the host name under which the one-process router reaches a
// subgraph through the in-process transport.
func InternalHost(name string) string { return name + ".vitola.internal" }

// Open builds the one-process platform: subgraphs reached through the in-process
// transport, still behind their internal-token check.
func Open(ctx context.Context, o Options) (_ *Platform, err error) {
	// p stays set on every return, so a failed start closes what it opened.
	p := &Platform{Subgraphs: map[string]http.Handler{}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	verifier, err := trust.NewVerifier(o.InternalKey)
	if err != nil {
		return nil, err
	}
	routerIssuer, _ := trust.NewIssuer(o.InternalKey, "router")
	shimIssuer, _ := trust.NewIssuer(o.InternalKey, "shim")
	catalogIssuer, _ := trust.NewIssuer(o.InternalKey, schema.Catalog)
	log := o.Logger
	log.Info().Str("store", o.Store.Backend()).Msg("opening stores")

	tel := o.Telemetry
	kvs, err := OpenKV(ctx, o.RedisURL, o.RedisPrefix, tel, log)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, kvs)
	keys, accessStore, err := OpenAccess(ctx, o.Store)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, accessStore)
	p.Keys = keys

	edgeChecks := []restshim.Check{{Name: "access", Check: keys.Ping}, {Name: "kv", Check: kvs.Ping}}
	checks := slices.Clone(edgeChecks)
	hosts := map[string]http.Handler{}
	urls := map[string]string{}
	names := map[string]string{InternalHost("router"): "router"} // by host, for telemetry
	for _, name := range schema.Subgraphs {
		urls[name] = "http://" + InternalHost(name) + "/graphql"
	}
	for _, name := range schema.All {
		names[InternalHost(name)] = name
	}
	// Every internal call is signed, traced and counted by caller and callee.
	internal := func(caller string, t http.RoundTripper, iss *trust.Issuer) http.RoundTripper {
		return InternalTransport(tel, caller, names, t, iss, nil)
	}
	prober := EntityProber(internal(schema.Catalog, &inproc.Transport{Handlers: hosts}, catalogIssuer), urls)
	var credits payments.Ledger
	var paymentsChecks []restshim.Check
	matchingIssuer, _ := trust.NewIssuer(o.InternalKey, schema.Matching)
	matchingCatalog := &subgraph.Client{URL: urls[schema.Catalog], HTTP: &http.Client{Transport: internal(schema.Matching, &inproc.Transport{Handlers: hosts}, matchingIssuer)}}
	for _, name := range schema.All {
		sg, err := OpenSubgraph(ctx, name, o.Store, SubgraphOptions{Demo: o.Demo, Prober: prober, Secret: o.InternalKey, PublicURL: o.PublicURL,
			FetchAllow: o.FetchAllow, ImageDecodeBudget: o.ImageDecodeBudget, CapacityWait: o.CapacityWait, Catalog: matchingCatalog, VisionModelURL: o.VisionModelURL, VisionModelKey: o.VisionModelKey, Payments: o.Payments, Logger: log,
			RedisURL: o.RedisURL, RedisPrefix: o.RedisPrefix, Metrics: MetricsRegistry(tel)})
		if err != nil {
			return nil, err
		}
		p.closers = append(p.closers, sg.Store)
		h := tel.Handler(name, subgraph.Handler(name, sg.GraphQL, verifier, sg.Store, sg.Routes...))
		hosts[InternalHost(name)] = h
		p.Subgraphs[name] = h
		checks = append(checks, restshim.Check{Name: name, Check: sg.Store.Ping})
		if name == schema.Payments {
			paymentsChecks = append(slices.Clone(edgeChecks), checks[len(checks)-1])
		}
		if sg.Credits != nil {
			credits, p.Credits = sg.Credits, sg.Credits
		}
		if sg.Images != nil {
			p.Images = sg.Images
		}
		if sg.Payments != nil {
			p.PaymentsService, p.PaymentsSender = sg.Payments, sg.Sender
		}
	}
	var demoKey string
	if o.Demo && o.DemoKeyOut != nil {
		if demoKey, err = EnsureDemoKey(ctx, keys, credits, o.Store.DataDir, o.PublicURL, o.DemoKeyOut, log); err != nil {
			return nil, err
		}
	}

	composed, err := router.LoadComposed(schema.RouterConfig, urls)
	if err != nil {
		return nil, err
	}
	composed.SeparateCallers(schema.Subgraphs...)
	var transport http.RoundTripper = &inproc.Transport{Handlers: hosts}
	if o.WrapSubgraphTransport != nil {
		transport = o.WrapSubgraphTransport(transport)
	}
	client := &http.Client{Transport: internal("router", transport, routerIssuer)}
	var shimTransport http.RoundTripper = &inproc.Transport{Handlers: hosts}
	if o.WrapShimTransport != nil {
		shimTransport = o.WrapShimTransport(shimTransport)
	}
	shimClient := &http.Client{Transport: internal("shim", shimTransport, shimIssuer)}
	p.Idempotency = idempotency.New(accessStore.Idempotency())
	usersClient := &subgraph.Client{HTTP: shimClient, URL: urls[schema.Users]}
	tokens := access.NewTokens(o.PublicURL, restshim.FetchJWKS(usersClient))
	var quotas *access.Quotas
	if o.Quotas != nil {
		quotas = access.NewQuotas(kvs, *o.Quotas, log)
		quotas.Observe(tel.QuotaRefused)
	}
	var apq kv.Store // automatic persisted queries: in Redis when there is one, else bounded in process
	if o.RedisURL != "" {
		apq = kvs
	}
	subs := o.Subscriptions
	subs.PublicFields = PublicSubscriptions
	rt, err := router.New(ctx, router.Config{Composed: composed, Client: client, Keys: keys, Tokens: tokens, Internal: verifier, Limits: o.Limits, Quotas: quotas, Tuning: o.RouterTuning, Logger: log, DemoKey: demoKey,
		Subscriptions: subs, Origins: keys,
		PersistedQueries: apq, Documents: accessStore})
	p.Router = rt
	if err != nil {
		return nil, err
	}
	// The shim reaches the router through the in-process transport too, to
	// the router's own route as the router component serves it.
	routerMux := http.NewServeMux()
	routerMux.Handle("/graphql", rt)
	routerClient := &subgraph.Client{URL: "http://" + InternalHost("router") + "/graphql", HTTP: &http.Client{Transport: internal("shim",
		&inproc.Transport{Handlers: map[string]http.Handler{InternalHost("router"): tel.Handler("router", routerMux)}}, shimIssuer)}}
	onCheckFailed := func(name string) {
		if name == "kv" {
			return // Redis errors are counted by command
		}
		tel.StoreError(name)
	}
	p.API = tel.EdgeHandler("api", restshim.NewServer(restshim.Deps{
		GraphQL: rt, Router: routerClient, Keys: keys, Origins: keys, Tokens: tokens, Users: usersClient, PublicURL: o.PublicURL, CookieKey: CookieKey(o.InternalKey), KV: kvs, Quotas: quotas,
		Catalog:     &subgraph.Client{HTTP: shimClient, URL: urls[schema.Catalog]},
		Payments:    &subgraph.Client{HTTP: shimClient, URL: "http://" + InternalHost(schema.Payments) + "/graphql"},
		Matching:    &subgraph.Client{HTTP: shimClient, URL: "http://" + InternalHost(schema.Matching) + "/graphql"},
		Idempotency: p.Idempotency,
		OpenAPI:     schema.OpenAPI, Checks: checks, ReadyTimeout: o.ReadyTimeout, OnCheckFailed: onCheckFailed, Logger: log,
	}))
	p.Payments = tel.EdgeHandler("payments", restshim.NewPaymentsServer(restshim.Deps{
		Payments:    &subgraph.Client{HTTP: shimClient, URL: "http://" + InternalHost(schema.Payments) + "/graphql"},
		Idempotency: p.Idempotency, PaymentsPublicURL: o.Payments.PublicURL, PaymentsOpenAPI: schema.PaymentsOpenAPI, CookieKey: CookieKey(o.InternalKey),
		Checks: paymentsChecks, ReadyTimeout: o.ReadyTimeout, OnCheckFailed: onCheckFailed, Logger: log,
	}))
	return p, nil
}

// PublicSubscriptions are the Subscription fields of Vitola's graph that a
// publishable key may open from a website: the public sessions feed, live.
var PublicSubscriptions = []string{"sessionStarted"}

// CookieKey derives the key that signs the OAuth pages' cookies from the
// internal key, so every shim replica accepts every other's cookies.
func CookieKey(internalKey []byte) []byte {
	sum := sha256.Sum256(append([]byte("vitola oauth cookies\x00"), internalKey...))
	return sum[:]
}

// InternalTransport is how a component calls the others: base carries the
// call, signed with the caller's internal token (only to the hosts in signed,
// when it is not nil), traced and counted by the telemetry (hosts names the
// callees by URL host). The token and the trace context go on one copy of
// the request.
func InternalTransport(tel *telemetry.Telemetry, caller string, hosts map[string]string, base http.RoundTripper, iss *trust.Issuer, signed map[string]bool) http.RoundTripper {
	return tel.Transport(caller, hosts, &trust.Transport{Base: base, Issuer: iss, Hosts: signed, Propagate: tel.Propagator()})
}

// EntityProber lets the catalog's node(id:) ask the users and venues subgraphs
// (at urls, by subgraph name) whether an ID of theirs exists.
func EntityProber(t http.RoundTripper, urls map[string]string) *subgraph.EntityProber {
	owners := map[string]string{"User": schema.Users, "Collection": schema.Users, "Humidor": schema.Users, "SmokeSession": schema.Users, "CheckIn": schema.Users, "PublicSession": schema.Users, "Venue": schema.Venues, "Event": schema.Venues}
	p := &subgraph.EntityProber{Client: &http.Client{Timeout: 10 * time.Second, Transport: t}, URLs: map[string]string{}}
	for typename, owner := range owners {
		if u, ok := urls[owner]; ok {
			p.URLs[typename] = u
		}
	}
	return p
}

// SignedHosts returns the hosts of Vitola's own subgraphs among a composition's
// subgraph URLs: only they get internal tokens, so a router fronting a foreign
// graph never hands one to a service outside the platform.
func SignedHosts(subgraphs map[string]string) map[string]bool {
	signed := map[string]bool{}
	for name, u := range subgraphs {
		if pu, err := url.Parse(u); err == nil && slices.Contains(schema.Subgraphs, name) {
			signed[pu.Host] = true
		}
	}
	return signed
}

// OpenKV opens Redis when url is set, the in-process store otherwise; tel
// counts Redis's failed commands. Redis sits behind a circuit breaker
// (kv/failover): while it is unreachable, at start too, an in-process store
// serves and /health/ready's kv check fails; a warning is logged when that
// begins and when it ends. Only a malformed URL is an error.
func OpenKV(ctx context.Context, url, prefix string, tel *telemetry.Telemetry, log zerolog.Logger) (kv.Store, error) {
	if url == "" {
		return memory.New(nil), nil
	}
	st, err := kvredis.New(url, prefix)
	if err != nil {
		return nil, fmt.Errorf("--redis-url (REDIS_URL): %w", err)
	}
	if tel != nil && tel.Metrics != nil {
		st.OnError(tel.RedisError)
	}
	pingErr := st.Ping(ctx)
	return failover.New(st, failover.Options{StartOpen: pingErr != nil, OnChange: func(open bool, err error) {
		tel.RedisFallback(open)
		if !open {
			log.Warn().Msg("Redis answers again: quotas, sign-in limits and persisted queries are shared again")
			return
		}
		if errors.Is(err, failover.ErrFallback) && pingErr != nil {
			err = pingErr // unreachable at start: the first ping says why
		}
		// The error names Redis's address: fine in the operator's log, never
		// in an HTTP answer.
		log.Warn().Err(err).Msg("Redis is unreachable: quotas, sign-in limits and persisted queries are per replica, in process, until it answers (see /health/ready: kv)")
	}}), nil
}

// OpenAccess opens the developer-key store and its service.
func OpenAccess(ctx context.Context, cfg sqldb.Config) (*access.Service, *accesssql.Store, error) {
	st, err := accesssql.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return access.NewService(st, nil), st, nil
}

// DemoKeyName names the key --demo creates once.
const DemoKeyName = "demo"

// DemoCredits are the demo key's credits: identify works out of the box.
const DemoCredits = 100

// EnsureDemoKey creates the demo key (with api.ai and DemoCredits credits) the
// first time, prints it once to out and writes it to DIR/demo-key.txt. With it
// comes a publishable key for the website widget, printed as a ready link and
// written to DIR/widget-link.txt (see demoWidget). A start stopped half-way is
// completed by the next: credits are granted if the key never got them, and a
// key whose file was never written (its plain text is lost) is revoked and
// made again. It returns the demo key (from its file on later starts; "" if
// the file no longer holds it), which GraphiQL fills in on this machine.
func EnsureDemoKey(ctx context.Context, keys *access.Service, credits payments.Ledger, dir, publicURL string, out io.Writer, log zerolog.Logger) (string, error) {
	list, err := keys.ListKeys(ctx)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "demo-key.txt")
	for _, k := range list {
		if k.Name != DemoKeyName || k.RevokedAt != nil {
			continue
		}
		if b, err := os.ReadFile(path); err == nil {
			plain := strings.TrimSpace(string(b))
			if found, err := keys.Authenticate(ctx, plain); err != nil || found.ID != k.ID {
				plain = ""
			}
			return plain, grantDemoCredits(ctx, credits, k.ID)
		}
		log.Warn().Str("key", k.ID).Msg("the demo key's file was never written: making a new demo key")
		if err := keys.RevokeKey(ctx, k.ID); err != nil {
			return "", fmt.Errorf("revoke the unusable demo key: %w", err)
		}
	}
	key, plain, err := keys.CreateKey(ctx, DemoKeyName, []string{access.EntitlementAI})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(plain+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write demo key: %w", err)
	}
	if err := grantDemoCredits(ctx, credits, key.ID); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "Demo developer key (shown once; also in %s):\n%s\n", path, plain)
	log.Info().Str("file", path).Msg("created the demo developer key")
	return plain, demoWidget(ctx, keys, publicURL, dir, out)
}

// grantDemoCredits gives the demo key its credits unless its ledger has any
// entry already.
func grantDemoCredits(ctx context.Context, credits payments.Ledger, keyID string) error {
	a, err := credits.Account(ctx, keyID)
	if err != nil {
		return fmt.Errorf("demo credits: %w", err)
	}
	txs, err := credits.Transactions(ctx, a.ID)
	if err != nil {
		return fmt.Errorf("demo credits: %w", err)
	}
	if len(txs) > 0 {
		return nil
	}
	if _, err := credits.Grant(ctx, keyID, DemoCredits, "demo"); err != nil {
		return fmt.Errorf("demo credits: %w", err)
	}
	return nil
}

// demoWidget makes a publishable key for the website widget and prints the link
// that shows the demo venue's sessions. A browser sends Origin only on
// cross-origin calls, so the page is served under the loopback API's other name
// (localhost for 127.0.0.1 and back), the key lists that origin alone, and the
// page calls the API at its public URL. Other public URLs get no widget key.
// The link is printed to out and written to DIR/widget-link.txt (the key in it
// is shown only then).
func demoWidget(ctx context.Context, keys *access.Service, publicURL, dir string, out io.Writer) error {
	api, err := url.Parse(publicURL)
	if err != nil {
		return fmt.Errorf("public URL: %w", err)
	}
	twin := map[string]string{"127.0.0.1": "localhost", "localhost": "127.0.0.1"}[api.Hostname()]
	if twin == "" {
		return nil
	}
	page := &url.URL{Scheme: api.Scheme, Host: net.JoinHostPort(twin, api.Port())}
	if api.Port() == "" {
		page.Host = twin
	}
	_, plain, err := keys.CreatePublishableKey(ctx, DemoKeyName+"-widget", []string{page.String()})
	if err != nil {
		return fmt.Errorf("demo widget key: %w", err)
	}
	q := url.Values{"api": {strings.TrimSuffix(publicURL, "/")}, "key": {plain}, "venue": {venuesdemo.VenueID("The Ember Room")}}
	link := page.String() + "/examples/widget/?" + q.Encode()
	path := filepath.Join(dir, "widget-link.txt")
	if err := os.WriteFile(path, []byte(link+"\n"), 0o600); err != nil {
		return fmt.Errorf("write the demo widget link: %w", err)
	}
	fmt.Fprintf(out, "Demo website widget (its publishable key works from %s only; also in %s):\n%s\n", page, path, link)
	return nil
}
