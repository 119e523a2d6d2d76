// Package sqlstore keeps the payments subgraph's data in its own SQL store
// (SQLite or a PostgreSQL schema).
package sqlstore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the payments store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the payments store's SQLite file and PostgreSQL schema name.
const StoreName = "payments"

// Store implements payments.Store.
type Store struct {
	db  *sqldb.DB
	now func() time.Time
}

var _ payments.Store = (*Store)(nil)

// Open opens and migrates the payments store.
func Open(ctx context.Context, cfg sqldb.Config) (*Store, error) {
	db, err := sqldb.Open(ctx, cfg, StoreName, Migrations)
	if err != nil {
		return nil, err
	}
	return New(db, time.Now), nil
}

// New wraps an open store; now stamps what it writes (tests inject a clock).
func New(db *sqldb.DB, now func() time.Time) *Store { return &Store{db: db, now: now} }

func (s *Store) Close() error                   { return s.db.Close() }
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// DB is the open store (the sandbox gateway keeps its tables here).
func (s *Store) DB() *sqldb.DB { return s.db }

func (s *Store) millis() int64 { return s.now().UnixMilli() }

// fromMillis reads a stored time.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// optMillis reads a stored nullable time.
func optMillis(ms *int64) *time.Time {
	if ms == nil {
		return nil
	}
	t := fromMillis(*ms)
	return &t
}

// list is a []string stored as a JSON array in TEXT.
type list []string

func (l list) text() string {
	if l == nil {
		l = list{}
	}
	b, _ := json.Marshal([]string(l))
	return string(b)
}

func readList(s string) []string {
	var out []string
	json.Unmarshal([]byte(s), &out)
	if out == nil {
		out = []string{}
	}
	return out
}

// flag is a boolean stored as 0 or 1 (portable between the two dialects).
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// getOne reads the one row query finds into dest; no row is ErrNotFound.
func getOne(ctx context.Context, db q, dest any, what, query string, args ...any) error {
	err := db.GetContext(ctx, dest, db.Rebind(query), args...)
	if sqldb.IsNoRows(err) {
		return payments.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}
