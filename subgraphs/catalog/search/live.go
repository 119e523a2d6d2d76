package search

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/follow"
	"github.com/vitolahq/vitola/subgraphs/catalog"
)

// Source is where the index comes from (the catalog store). A Source that is
// a Watcher too is followed as it tells of changes, within milliseconds;
// otherwise at each poll.
type Source interface {
	// Version changes whenever the catalog does.
	Version(ctx context.Context) (int64, error)
	Catalog
	// ChangesSince returns the brands and cigars written after a version.
	ChangesSince(ctx context.Context, version int64) (*catalog.Changes, error)
}

// Watcher tells of changes to the catalog as they commit (sqlstore.Store.Watch).
type Watcher interface {
	// Watch calls changed whenever the catalog may have changed, until ctx
	// ends or it fails.
	Watch(ctx context.Context, changed func()) error
}

// Live keeps an index in step with the catalog store: an import by another
// process (or on another replica) is searchable within milliseconds of its
// commit when the store is a Watcher, else within one poll interval,
// without a restart. It builds the first index from the whole catalog and
// then applies what changed since the version it holds (Index.Apply); a
// fragmented index is compacted in the background.
type Live struct {
	v          *follow.Value[Index]
	src        Source
	log        zerolog.Logger
	ctx        context.Context
	started    chan struct{} // closed once v is set
	compacting atomic.Bool
}

// PollInterval is how often replicas look for catalog changes; a Watcher
// tells of them sooner.
const PollInterval = 250 * time.Millisecond

// NewLive builds the first index and follows the source until ctx ends.
func NewLive(ctx context.Context, src Source, log zerolog.Logger) (*Live, error) {
	l := &Live{src: src, log: log, ctx: ctx, started: make(chan struct{})}
	fs := follow.Source[Index]{
		Name:    "search index",
		Version: src.Version,
		Build:   l.build,
		Update:  l.update,
	}
	if w, ok := src.(Watcher); ok {
		fs.Watch = w.Watch
	}
	v, err := follow.Start(ctx, fs, PollInterval, log)
	if err != nil {
		return nil, err
	}
	l.v = v
	close(l.started)
	return l, nil
}

// build indexes the whole catalog.
func (l *Live) build(ctx context.Context) (*Index, error) { return BuildFrom(ctx, l.src) }

// Catalog is what a whole index is built from (the catalog store).
type Catalog interface {
	AllBrands(ctx context.Context) ([]*catalog.Brand, error)
	AllCigars(ctx context.Context) ([]*catalog.Cigar, error)
}

// BuildFrom reads the whole catalog from src and indexes it.
func BuildFrom(ctx context.Context, src Catalog) (*Index, error) {
	brands, err := src.AllBrands(ctx)
	if err != nil {
		return nil, err
	}
	cigars, err := src.AllCigars(ctx)
	if err != nil {
		return nil, err
	}
	return Build(brands, cigars), nil
}

// update applies to ix, which holds version since, what changed after it.
func (l *Live) update(ctx context.Context, ix *Index, since int64) (*Index, int64, error) {
	ch, err := l.src.ChangesSince(ctx, since)
	if err != nil {
		return nil, 0, err
	}
	if ch.Version < since {
		// The catalog went back (a store restored from a backup): what
		// changed is unknown, so build anew.
		next, err := l.build(ctx)
		return next, ch.Version, err
	}
	next := ix.Apply(ch.Brands, ch.Cigars)
	if next.Fragmented() {
		l.compact(next, ch.Version)
	}
	return next, ch.Version, nil
}

// compact builds ix (at version at) anew in the background, applies to it
// what changed in the meantime and serves it. Queries are served by the
// current index all along, and changes keep being applied to it.
func (l *Live) compact(ix *Index, at int64) {
	if !l.compacting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.compacting.Store(false)
		fresh := ix.Compact()
		<-l.started
		err := l.v.Swap(l.ctx, func(ctx context.Context, cur *Index, version int64) (*Index, int64, error) {
			ch, err := l.src.ChangesSince(ctx, at)
			if err != nil {
				return nil, 0, err
			}
			if ch.Version < at { // went back: the next refresh rebuilds
				return cur, version, nil
			}
			return fresh.Apply(ch.Brands, ch.Cigars), ch.Version, nil
		})
		if err != nil && l.ctx.Err() == nil {
			l.log.Warn().Err(err).Msg("compact the search index")
		}
	}()
}

// Index returns the current snapshot.
func (l *Live) Index() *Index { return l.v.Get() }

// Refresh brings the index up to date if the catalog changed since.
func (l *Live) Refresh(ctx context.Context) error { return l.v.Refresh(ctx) }
