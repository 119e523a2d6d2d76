package platform

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/schema"
	"github.com/vitolahq/vitola/sqldb"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	cataloggraph "github.com/vitolahq/vitola/subgraphs/catalog/graph"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	usersgraph "github.com/vitolahq/vitola/subgraphs/users/graph"
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
// internal-token check) and its store.
type Subgraph struct {
	GraphQL http.Handler
	Store   StoreHandle
}

// OpenSubgraph opens (and migrates) a subgraph's store, seeds its demo data into
// an empty store when demo is set, and returns its GraphQL handler.
// prober is used by the catalog's node(id:) to check other subgraphs' IDs (nil:
// unchecked).
func OpenSubgraph(ctx context.Context, name string, cfg sqldb.Config, demo bool, prober cataloggraph.Prober, log zerolog.Logger) (*Subgraph, error) {
	start := time.Now()
	var (
		sg     *Subgraph
		seeded bool
		err    error
	)
	switch name {
	case schema.Catalog:
		st, err2 := catalogsql.Open(ctx, cfg)
		if err2 != nil {
			return nil, err2
		}
		sg = &Subgraph{GraphQL: cataloggraph.NewHandler(st, prober), Store: st}
		if demo {
			var brands int
			if brands, _, _, err = st.Counts(ctx); err == nil && brands == 0 {
				seeded = true
				err = catalogdemo.Seed(ctx, st, func(done, total int) {
					log.Info().Int("cigars", done).Int("of", total).Msg("seeding the demo catalog")
				})
			}
		}
	case schema.Users:
		st, err2 := userssql.Open(ctx, cfg)
		if err2 != nil {
			return nil, err2
		}
		sg = &Subgraph{GraphQL: usersgraph.NewHandler(st), Store: st}
		if demo {
			var n int
			if n, err = st.CountUsers(ctx); err == nil && n == 0 {
				seeded, err = true, usersdemo.Seed(ctx, st)
			}
		}
	case schema.Venues:
		st, err2 := venuessql.Open(ctx, cfg)
		if err2 != nil {
			return nil, err2
		}
		sg = &Subgraph{GraphQL: venuesgraph.NewHandler(st), Store: st}
		if demo {
			var n int
			if n, _, err = st.Counts(ctx); err == nil && n == 0 {
				seeded, err = true, venuesdemo.Seed(ctx, st)
			}
		}
	default:
		return nil, fmt.Errorf("unknown subgraph %q", name)
	}
	if err != nil {
		sg.Store.Close()
		return nil, fmt.Errorf("seed the %s demo data: %w", name, err)
	}
	ev := log.Info().Str("subgraph", name).Dur("took", time.Since(start))
	if seeded {
		ev = ev.Bool("seeded_demo", true)
	}
	ev.Msg("store ready")
	return sg, nil
}
