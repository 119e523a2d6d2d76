package platform

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/bus"
	busredis "github.com/vitolahq/vitola/internal/bus/redis"
	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/follow"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/schema"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	cataloggraph "github.com/vitolahq/vitola/subgraphs/catalog/graph"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	matchinggraph "github.com/vitolahq/vitola/subgraphs/matching/graph"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/matcher"
	"github.com/vitolahq/vitola/subgraphs/matching/model"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
	matchingsql "github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/payments"
	paymentsdemo "github.com/vitolahq/vitola/subgraphs/payments/demo"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/sandbox"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/stripe"
	paymentsgraph "github.com/vitolahq/vitola/subgraphs/payments/graph"
	"github.com/vitolahq/vitola/subgraphs/payments/pci"
	paymentssql "github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	usersgraph "github.com/vitolahq/vitola/subgraphs/users/graph"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
	venuesgraph "github.com/vitolahq/vitola/subgraphs/venues/graph"
	venuessql "github.com/vitolahq/vitola/subgraphs/venues/sqlstore"
)

// StoreHandle is what the platform needs of any store.
type StoreHandle interface {
	Ping(ctx context.Context) error
	io.Closer
}

// Subgraph is an opened subgraph: its GraphQL handler (without the
// internal-token check) and its store. Closing the store also stops the
// subgraph's background work.
type Subgraph struct {
	GraphQL http.Handler
	Store   StoreHandle
	// Credits is the payments subgraph's ledger (nil for the others): the
	// one-process platform grants the demo key its credits through it.
	Credits payments.Ledger
	// Payments is the payments subgraph's service (nil for the others).
	Payments *payments.Service
	// Sender delivers the payments subgraph's callbacks (nil for the others).
	Sender *payments.Sender
	// Images is the matching subgraph's image fetcher (nil for the others):
	// its decode budget is what every request's images share.
	Images *imagefetch.Fetcher
	// Routes are the subgraph's own routes beside /graphql.
	Routes []subgraph.Route
	// Live is the users subgraph's event bus (nil for the others): closing it
	// ends every open subscription with SHUTTING_DOWN, which a graceful
	// shutdown does first, so that no stream holds the server open.
	Live io.Closer
}

// SubgraphOptions configure OpenSubgraph.
type SubgraphOptions struct {
	// Demo seeds demo data into an empty store.
	Demo bool
	// Prober lets the catalog's node(id:) check other subgraphs' IDs (nil:
	// unchecked).
	Prober cataloggraph.Prober
	// Secret signs the catalog's search cursors (the internal key).
	Secret []byte
	// PublicURL is the API's public base URL: the OAuth issuer.
	PublicURL string
	// FetchAllow are address ranges the image fetcher may reach although they
	// are not public (private deployments, tests); empty by default.
	FetchAllow []netip.Prefix
	// ImageDecodeBudget caps the bytes image decoding holds at once (0: the
	// default, imagefetch.DefaultDecodeBudget).
	ImageDecodeBudget int64
	// CapacityWait bounds a request's wait for the decode budget before it
	// is refused with over_capacity (0: imagefetch.DefaultCapacityWait).
	CapacityWait time.Duration
	// Catalog is matching's client to the catalog subgraph (identify resolves
	// text and names cigars there).
	Catalog *subgraph.Client
	// VisionModelURL and VisionModelKey configure identify's optional model
	// fallback (empty URL: off).
	VisionModelURL, VisionModelKey string
	// Payments configures the payments subgraph.
	Payments PaymentsOptions
	// RedisURL and RedisPrefix: the users subgraph's live events go through
	// Redis pub/sub when RedisURL is set (every replica's subscriptions see
	// every replica's writes), in process otherwise.
	RedisURL, RedisPrefix string
	// Metrics, when set, registers the subgraph's own metrics (the users
	// subgraph's live events).
	Metrics prometheus.Registerer
	Logger  zerolog.Logger
}

// PaymentsOptions configure the payments subgraph.
type PaymentsOptions struct {
	// PublicURL is the payments origin's public URL ({payments_origin}):
	// billing account assertions name {payments_origin}/api/v1 as audience.
	PublicURL string
	// KEKs are the key-encryption keys ("ID:BASE64,ID:BASE64", the first
	// current) that seal gateway credentials and vault references; empty:
	// one derived from the internal key.
	KEKs string
	// StripeAPIURL is the Stripe API's base URL (stripe-mock in tests);
	// empty: Stripe's own.
	StripeAPIURL string
	// CallbackTimeout bounds one callback delivery (default 15 s);
	// CallbackMaxAge ends an event's retries (default 72 h).
	CallbackTimeout, CallbackMaxAge time.Duration
	// ChargeLease is how long a charge attempt is one replica's (default 2 min).
	ChargeLease time.Duration
}

// stopping closes a store after stopping the work that reads it.
type stopping struct {
	StoreHandle
	stop func()
}

func (s stopping) Close() error {
	s.stop()
	return s.StoreHandle.Close()
}

// OpenSubgraph opens (and migrates) a subgraph's store, seeds its demo data into
// an empty store when asked, and returns its GraphQL handler.
func OpenSubgraph(ctx context.Context, name string, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, error) {
	start := time.Now()
	open := map[string]func(context.Context, sqldb.Config, SubgraphOptions) (*Subgraph, bool, error){
		schema.Catalog: openCatalog, schema.Users: openUsers, schema.Venues: openVenues, schema.Payments: openPayments, schema.Matching: openMatching,
	}[name]
	if open == nil {
		return nil, fmt.Errorf("unknown subgraph %q", name)
	}
	sg, seeded, err := open(ctx, cfg, o)
	if err != nil {
		return nil, fmt.Errorf("%s subgraph: %w", name, err)
	}
	o.Logger.Info().Str("subgraph", name).Dur("took", time.Since(start)).Bool("seeded_demo", seeded).Msg("store ready")
	return sg, nil
}

// seedIfEmpty runs seed when demo is asked for and count finds nothing yet.
func seedIfEmpty(ctx context.Context, demo bool, count func(context.Context) (int, error), seed func(context.Context) error) (bool, error) {
	if !demo {
		return false, nil
	}
	n, err := count(ctx)
	if err != nil || n > 0 {
		return false, err
	}
	if err := seed(ctx); err != nil {
		return false, fmt.Errorf("seed demo data: %w", err)
	}
	return true, nil
}

func openCatalog(ctx context.Context, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, bool, error) {
	st, err := catalogsql.Open(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	seeded, err := seedIfEmpty(ctx, o.Demo,
		func(ctx context.Context) (int, error) { b, _, _, err := st.Counts(ctx); return b, err },
		func(ctx context.Context) error {
			return catalogdemo.Seed(ctx, st, func(done, total int) {
				o.Logger.Info().Int("cigars", done).Int("of", total).Msg("seeding the demo catalog")
			})
		})
	if err != nil {
		st.Close()
		return nil, false, err
	}
	// The index follows the store until the subgraph closes.
	ictx, stop := context.WithCancel(context.WithoutCancel(ctx))
	live, err := search.NewLive(ictx, st, o.Logger)
	if err != nil {
		stop()
		st.Close()
		return nil, false, err
	}
	gql := cataloggraph.NewHandler(&cataloggraph.Resolver{Store: st, Search: live, Cursors: search.NewCursors(o.Secret), Prober: o.Prober})
	return &Subgraph{GraphQL: gql, Store: stopping{StoreHandle: st, stop: stop}}, seeded, nil
}

func openUsers(ctx context.Context, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, bool, error) {
	st, err := userssql.Open(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	seeded, err := seedIfEmpty(ctx, o.Demo, st.CountUsers, func(ctx context.Context) error { return usersdemo.Seed(ctx, st) })
	if err != nil {
		st.Close()
		return nil, false, err
	}
	// The first start makes the access-token signing key (replicas starting
	// together each may; every one verifies, the newest signs).
	if _, err := oauth.LiveKeys(ctx, st, time.Now()); err != nil {
		st.Close()
		return nil, false, fmt.Errorf("token signing key: %w", err)
	}
	events, err := openBus(ctx, o)
	if err != nil {
		st.Close()
		return nil, false, err
	}
	if o.Metrics != nil {
		for _, c := range bus.Collectors(events) {
			if err := o.Metrics.Register(c); err != nil {
				events.Close()
				st.Close()
				return nil, false, fmt.Errorf("live event metrics: %w", err)
			}
		}
	}
	gql := usersgraph.NewHandler(st, o.PublicURL, usersgraph.Options{Bus: events, Log: o.Logger})
	return &Subgraph{GraphQL: gql, Store: stopping{StoreHandle: st, stop: func() { events.Close() }}, Live: events}, seeded, nil
}

// MetricsRegistry is where a component registers metrics of its own: tel's
// registry, or nil when tel reports none.
func MetricsRegistry(tel *telemetry.Telemetry) prometheus.Registerer {
	if tel == nil || tel.Metrics == nil {
		return nil
	}
	return tel.Metrics.Registry
}

// openBus opens the users subgraph's event bus: Redis pub/sub when a Redis URL
// is set, else in process. A Redis that does not answer at start is no
// failure (writes never depend on it): the bus listens as soon as it does.
func openBus(ctx context.Context, o SubgraphOptions) (bus.Bus, error) {
	if o.RedisURL == "" {
		return bus.NewLocal(0), nil
	}
	b, err := busredis.Open(ctx, o.RedisURL, o.RedisPrefix+"bus:", 0)
	if errors.Is(err, busredis.ErrUnreachable) {
		o.Logger.Warn().Err(err).Msg("Redis is unreachable: live events (subscriptions) reach other replicas once it answers")
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--redis-url (REDIS_URL): %w", err)
	}
	return b, nil
}

func openVenues(ctx context.Context, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, bool, error) {
	st, err := venuessql.Open(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	seeded, err := seedIfEmpty(ctx, o.Demo,
		func(ctx context.Context) (int, error) { v, _, err := st.Counts(ctx); return v, err },
		func(ctx context.Context) error { return venuesdemo.Seed(ctx, st) })
	if err != nil {
		st.Close()
		return nil, false, err
	}
	return &Subgraph{GraphQL: venuesgraph.NewHandler(st), Store: st}, seeded, nil
}

func openPayments(ctx context.Context, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, bool, error) {
	svc, st, err := OpenPayments(ctx, cfg, o.Payments, o.Secret)
	if err != nil {
		return nil, false, err
	}
	seeded, err := seedIfEmpty(ctx, o.Demo, st.CountMerchants, func(ctx context.Context) error { return paymentsdemo.Seed(ctx, svc) })
	if err != nil {
		st.Close()
		return nil, false, err
	}
	// Every replica runs the background work; each piece is guarded so it
	// happens once: a hold is released once (its state guards the release),
	// a purchase is claimed by one replica (a lease, SKIP LOCKED).
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go every(sctx, 30*time.Second, o.Logger, "release expired credit holds", st.ReleaseExpired)
	go every(sctx, 30*time.Second, o.Logger, "expire payment sessions", st.ExpireSessions)
	go every(sctx, 10*time.Minute, o.Logger, "forget expired payment session keys", st.ForgetKeptCreates)
	go every(sctx, time.Second, o.Logger, "charge reloads and reconcile pending charges", func(ctx context.Context, _ time.Time) (int, error) {
		return svc.RunWorker(ctx)
	})
	sender := payments.NewSender(svc, o.Payments.CallbackTimeout, o.Payments.CallbackMaxAge)
	go every(sctx, time.Second, o.Logger, "deliver fulfillment callbacks", func(ctx context.Context, _ time.Time) (int, error) {
		return sender.RunOnce(ctx)
	})
	return &Subgraph{GraphQL: paymentsgraph.NewHandler(svc), Store: stopping{StoreHandle: st, stop: stop}, Credits: st, Payments: svc, Sender: sender,
		Routes: []subgraph.Route{{Pattern: "POST " + pci.Path, Handler: pci.NewHandler(svc)}}}, seeded, nil
}

// OpenPayments opens the payments store and its service (the subgraph's, or
// an admin command's).
func OpenPayments(ctx context.Context, cfg sqldb.Config, o PaymentsOptions, internalKey []byte) (*payments.Service, *paymentssql.Store, error) {
	keys, err := PaymentsKeyring(o.KEKs, internalKey)
	if err != nil {
		return nil, nil, err
	}
	stripeGateway, err := stripe.New(stripe.Options{APIURL: o.StripeAPIURL})
	if err != nil {
		return nil, nil, err
	}
	st, err := paymentssql.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	svc := &payments.Service{Store: st, Keys: keys, Audience: strings.TrimSuffix(o.PublicURL, "/") + "/api/v1", ChargeLease: o.ChargeLease,
		Gateways: map[string]payments.Gateway{
			sandbox.Name: &sandbox.Gateway{DB: st.DB()},
			stripe.Name:  stripeGateway,
		}}
	return svc, st, nil
}

// PaymentsKeyring reads the payments KEKs, or derives one from the internal
// key when none are configured (the embedded default: the data directory
// keeps the internal key, so it survives restarts).
func PaymentsKeyring(spec string, internalKey []byte) (*envelope.Keyring, error) {
	if spec != "" {
		return envelope.ParseKeyring(spec)
	}
	sum := sha256.Sum256(append([]byte("vitola payments key-encryption key\x00"), internalKey...))
	k := &envelope.Keyring{}
	if err := k.Add("internal", sum[:]); err != nil {
		return nil, err
	}
	return k, nil
}

// every runs work every interval until ctx ends, logging what it did.
func every(ctx context.Context, interval time.Duration, log zerolog.Logger, what string, work func(context.Context, time.Time) (int, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n, err := work(ctx, now); err != nil && ctx.Err() == nil {
				log.Error().Err(err).Msg(what)
			} else if n > 0 {
				log.Info().Int("count", n).Msg(what)
			}
		}
	}
}

func openMatching(ctx context.Context, cfg sqldb.Config, o SubgraphOptions) (*Subgraph, bool, error) {
	st, err := matchingsql.Open(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	seeded, err := seedIfEmpty(ctx, o.Demo, st.CountEvidence, func(ctx context.Context) error { return evidence.SeedDemo(ctx, st) })
	if err != nil {
		st.Close()
		return nil, false, err
	}
	// Recognition serves a snapshot of the evidence that follows the store:
	// evidence added by any process is recognized within milliseconds
	// (Watch), or at the next poll when the watch is down.
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var builder recognize.Builder
	snapshots, err := follow.Start(fctx, follow.Source[recognize.Snapshot]{
		Name:    "recognition index",
		Version: st.EvidenceVersion,
		Watch:   st.Watch,
		Build: func(ctx context.Context) (*recognize.Snapshot, error) {
			all, err := st.AllEvidence(ctx)
			if err != nil {
				return nil, err
			}
			return builder.Build(all), nil
		},
	}, search.PollInterval, o.Logger)
	if err != nil {
		stop()
		st.Close()
		return nil, false, err
	}
	m := &matcher.Matcher{
		Fetch:    imagefetch.New(imagefetch.Config{AllowCIDRs: o.FetchAllow, DecodeBudget: o.ImageDecodeBudget, CapacityWait: o.CapacityWait, Work: fingerprint.WorkBytes}),
		Sealer:   matching.NewSealer(o.Secret),
		Evidence: snapshots,
		Log:      o.Logger,
	}
	if o.Catalog != nil {
		m.Catalog = matcher.CatalogClient{Client: o.Catalog}
	}
	if o.VisionModelURL != "" {
		if m.Model, err = model.New(o.VisionModelURL, o.VisionModelKey); err != nil {
			stop()
			st.Close()
			return nil, false, err
		}
	}
	if fingerprint.TesseractAvailable() {
		m.OCR = fingerprint.Tesseract{}
	}
	return &Subgraph{GraphQL: matchinggraph.NewHandler(m), Store: stopping{StoreHandle: st, stop: stop}, Images: m.Fetch}, seeded, nil
}
