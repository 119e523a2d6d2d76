// Package sqlstore keeps venues and events in the venues subgraph's own SQL store.
package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/venues"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the venues store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the venues store's SQLite file and PostgreSQL schema name.
const StoreName = "venues"

// Store implements venues.Store. Inside Write, q is the transaction.
type Store struct {
	db *sqldb.DB
	q  querier
}

// querier is what the store's queries need: the database or a transaction.
type querier interface {
	sqlx.ExtContext
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

var _ venues.Store = (*Store)(nil)

// Open opens and migrates the venues store.
func Open(ctx context.Context, cfg sqldb.Config) (*Store, error) {
	db, err := sqldb.Open(ctx, cfg, StoreName, Migrations)
	if err != nil {
		return nil, err
	}
	return New(db), nil
}

// New wraps an open store.
func New(db *sqldb.DB) *Store { return &Store{db: db, q: db} }

func (s *Store) Close() error                   { return s.db.Close() }
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

const venueCols = `id, name, city, country, website`

type venueRow struct {
	ID      string  `db:"id"`
	Name    string  `db:"name"`
	City    string  `db:"city"`
	Country string  `db:"country"`
	Website *string `db:"website"`
}

func (s *Store) Venue(ctx context.Context, id string) (*venues.Venue, error) {
	vs, err := s.venues(ctx, `SELECT `+venueCols+` FROM venues WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, venues.ErrNotFound
	}
	return vs[0], nil
}

func (s *Store) Venues(ctx context.Context, p venues.Page) ([]*venues.Venue, error) {
	cond, args, tail := p.Keyset("id")
	return s.venues(ctx, `SELECT `+venueCols+` FROM venues WHERE `+cond+tail, args...)
}

func (s *Store) venues(ctx context.Context, q string, args ...any) ([]*venues.Venue, error) {
	var rows []venueRow
	if err := s.q.SelectContext(ctx, &rows, s.q.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("query venues: %w", err)
	}
	out := make([]*venues.Venue, len(rows))
	for i, r := range rows {
		out[i] = &venues.Venue{ID: r.ID, Name: r.Name, City: r.City, Country: r.Country, Website: r.Website}
	}
	return out, nil
}

const eventCols = `id, venue_id, brand_id, name, starts_at, ends_at`

type eventRow struct {
	ID       string    `db:"id"`
	VenueID  string    `db:"venue_id"`
	BrandID  *string   `db:"brand_id"`
	Name     string    `db:"name"`
	StartsAt time.Time `db:"starts_at"`
	EndsAt   time.Time `db:"ends_at"`
}

func (s *Store) Event(ctx context.Context, id string) (*venues.Event, error) {
	es, err := s.events(ctx, `SELECT `+eventCols+` FROM events WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, venues.ErrNotFound
	}
	return es[0], nil
}

func (s *Store) Events(ctx context.Context, f venues.EventFilter, p venues.Page) ([]*venues.Event, error) {
	q := `SELECT ` + eventCols + ` FROM events WHERE 1 = 1`
	var args []any
	if f.VenueID != "" {
		q += ` AND venue_id = ?`
		args = append(args, f.VenueID)
	}
	if f.BrandID != "" {
		q += ` AND brand_id = ?`
		args = append(args, f.BrandID)
	}
	cond, kargs, tail := p.Keyset("starts_key", "id")
	return s.events(ctx, q+` AND `+cond+tail, append(args, kargs...)...)
}

func (s *Store) events(ctx context.Context, q string, args ...any) ([]*venues.Event, error) {
	var rows []eventRow
	if err := s.q.SelectContext(ctx, &rows, s.q.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("query events: %w", err)
	}
	out := make([]*venues.Event, len(rows))
	for i, r := range rows {
		out[i] = &venues.Event{ID: r.ID, VenueID: r.VenueID, BrandID: r.BrandID, Name: r.Name, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC()}
	}
	return out, nil
}

func (s *Store) UpsertVenue(ctx context.Context, v *venues.Venue) error {
	_, err := s.q.ExecContext(ctx, s.q.Rebind(`INSERT INTO venues (id, name, city, country, website) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, city = excluded.city, country = excluded.country, website = excluded.website`),
		v.ID, v.Name, v.City, v.Country, v.Website)
	if err != nil {
		return fmt.Errorf("upsert venue %q: %w", v.Name, err)
	}
	return nil
}

func (s *Store) UpsertEvent(ctx context.Context, e *venues.Event) error {
	_, err := s.q.ExecContext(ctx, s.q.Rebind(`INSERT INTO events (id, venue_id, brand_id, name, starts_key, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET venue_id = excluded.venue_id, brand_id = excluded.brand_id, name = excluded.name,
		starts_key = excluded.starts_key, starts_at = excluded.starts_at, ends_at = excluded.ends_at`),
		e.ID, e.VenueID, e.BrandID, e.Name, venues.StartsKey(e.StartsAt), e.StartsAt.UTC(), e.EndsAt.UTC())
	if err != nil {
		return fmt.Errorf("upsert event %q: %w", e.Name, err)
	}
	return nil
}

// Write runs fn in one transaction: what it writes lands together or not at all.
func (s *Store) Write(ctx context.Context, fn func(w venues.Writer) error) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return fn(&Store{db: s.db, q: tx})
	})
}

func (s *Store) Counts(ctx context.Context) (v, e int, err error) {
	err = s.q.QueryRowxContext(ctx, `SELECT (SELECT COUNT(*) FROM venues), (SELECT COUNT(*) FROM events)`).Scan(&v, &e)
	return
}
