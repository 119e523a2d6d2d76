package platform

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/follow"
	"github.com/vitolahq/vitola/internal/sqldb"
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
	paymentsgraph "github.com/vitolahq/vitola/subgraphs/payments/graph"
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
	// Catalog is matching's client to the catalog subgraph (identify resolves
	// text and names cigars there).
	Catalog *subgraph.Client
	// VisionModelURL and VisionModelKey configure identify's optional model
	// fallback (empty URL: off).
	VisionModelURL, VisionModelKey string
	Logger                         zerolog.Logger
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
	return &Subgraph{GraphQL: usersgraph.NewHandler(st, o.PublicURL), Store: st}, seeded, nil
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
	st, err := paymentssql.Open(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	// Holds of requests that died are given back: every replica sweeps, and a
	// hold is released once (its state guards the release).
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go sweepReservations(sctx, st, o.Logger)
	return &Subgraph{GraphQL: paymentsgraph.NewHandler(st), Store: stopping{StoreHandle: st, stop: stop}, Credits: st}, false, nil
}

// sweepReservations releases expired credit holds every 30 seconds.
func sweepReservations(ctx context.Context, ledger payments.Ledger, log zerolog.Logger) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n, err := ledger.ReleaseExpired(ctx, now); err != nil && ctx.Err() == nil {
				log.Error().Err(err).Msg("release expired credit holds")
			} else if n > 0 {
				log.Info().Int("released", n).Msg("released expired credit holds")
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
	// evidence added by any process is recognized within a second.
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var builder recognize.Builder
	snapshots, err := follow.Start(fctx, follow.Source[recognize.Snapshot]{
		Name:    "recognition index",
		Version: st.EvidenceVersion,
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
		Fetch:    imagefetch.New(imagefetch.Config{AllowCIDRs: o.FetchAllow, DecodeBudget: o.ImageDecodeBudget, Work: fingerprint.WorkBytes}),
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
	return &Subgraph{GraphQL: matchinggraph.NewHandler(m), Store: stopping{StoreHandle: st, stop: stop}}, seeded, nil
}
