package search

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/follow"
	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Source is where the index comes from (the catalog store).
type Source interface {
	// Version changes whenever the catalog does.
	Version(ctx context.Context) (int64, error)
	AllBrands(ctx context.Context) ([]*catalog.Brand, error)
	AllCigars(ctx context.Context) ([]*catalog.Cigar, error)
}

// Live keeps an index in step with the catalog store: an import by another
// process (or on another replica) is searchable within one poll interval,
// without a restart.
type Live struct{ v *follow.Value[Index] }

// PollInterval is how often replicas look for catalog changes.
const PollInterval = 250 * time.Millisecond

// NewLive builds the first index and follows the source until ctx ends.
func NewLive(ctx context.Context, src Source, log zerolog.Logger) (*Live, error) {
	v, err := follow.Start(ctx, follow.Source[Index]{
		Name:    "search index",
		Version: src.Version,
		Build: func(ctx context.Context) (*Index, error) {
			brands, err := src.AllBrands(ctx)
			if err != nil {
				return nil, err
			}
			cigars, err := src.AllCigars(ctx)
			if err != nil {
				return nil, err
			}
			return Build(brands, cigars), nil
		},
	}, PollInterval, log)
	if err != nil {
		return nil, err
	}
	return &Live{v: v}, nil
}

// Index returns the current snapshot.
func (l *Live) Index() *Index { return l.v.Get() }

// Refresh rebuilds the index if the catalog changed since the last build.
func (l *Live) Refresh(ctx context.Context) error { return l.v.Refresh(ctx) }
