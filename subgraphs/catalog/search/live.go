package search

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Source is where the index comes from (the catalog store).
type Source interface {
	// Version changes whenever the catalog does.
	Version(ctx context.Context) (int64, error)
	AllBrands(ctx context.Context) ([]*catalog.Brand, error)
	AllCigars(ctx context.Context) ([]*catalog.Cigar, error)
}

// Live keeps an index in step with its source: it polls the catalog's version and
// rebuilds when it moves, so an import by another process (or on another replica)
// is searchable within one poll interval, without a restart.
type Live struct {
	src     Source
	log     zerolog.Logger
	current atomic.Pointer[Index]
	mu      sync.Mutex // one rebuild at a time
	version int64
}

// PollInterval is how often replicas look for catalog changes.
const PollInterval = 250 * time.Millisecond

// NewLive builds the first index and follows the source until ctx ends.
func NewLive(ctx context.Context, src Source, log zerolog.Logger) (*Live, error) {
	l := &Live{src: src, log: log, version: -1}
	if err := l.Refresh(ctx); err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(PollInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := l.Refresh(ctx); err != nil && ctx.Err() == nil {
					l.log.Warn().Err(err).Msg("refresh the search index")
				}
			}
		}
	}()
	return l, nil
}

// Index returns the current snapshot.
func (l *Live) Index() *Index { return l.current.Load() }

// Refresh rebuilds the index if the catalog changed since the last build.
func (l *Live) Refresh(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, err := l.src.Version(ctx)
	if err != nil {
		return fmt.Errorf("catalog version: %w", err)
	}
	if v == l.version {
		return nil
	}
	start := time.Now()
	brands, err := l.src.AllBrands(ctx)
	if err != nil {
		return err
	}
	cigars, err := l.src.AllCigars(ctx)
	if err != nil {
		return err
	}
	l.current.Store(Build(brands, cigars))
	l.version = v
	l.log.Debug().Int("cigars", len(cigars)).Dur("took", time.Since(start)).Int64("version", v).Msg("search index built")
	return nil
}
