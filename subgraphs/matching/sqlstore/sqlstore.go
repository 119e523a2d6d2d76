// Package sqlstore keeps the matching subgraph's evidence in its own SQL store.
package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/matching"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the matching store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the matching store's SQLite file and PostgreSQL schema name.
const StoreName = "matching"

// Store implements matching.EvidenceStore.
type Store struct{ db *sqldb.DB }

var _ matching.EvidenceStore = (*Store)(nil)

// Open opens and migrates the matching store.
func Open(ctx context.Context, cfg sqldb.Config) (*Store, error) {
	db, err := sqldb.Open(ctx, cfg, StoreName, Migrations)
	if err != nil {
		return nil, err
	}
	return New(db), nil
}

// New wraps an open store.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func (s *Store) Close() error                   { return s.db.Close() }
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

func (s *Store) AddEvidence(ctx context.Context, ev []*matching.Evidence) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		for _, e := range ev {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO evidence (id, cigar_id, source, fingerprint, created_at) VALUES (?, ?, ?, ?, ?)`),
				e.ID, e.CigarID, e.Source, string(e.Fingerprint), e.CreatedAt.UnixMilli()); err != nil {
				return fmt.Errorf("store evidence for %s: %w", e.CigarID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE evidence_version SET version = version + 1 WHERE id = 1`); err != nil {
			return fmt.Errorf("move the evidence version: %w", err)
		}
		return s.db.Notify(ctx, tx, changesChannel) // Watch
	})
}

// changesChannel is where evidence writes tell PostgreSQL listeners (Watch)
// they committed.
const changesChannel = "evidence_changes"

// Watch calls changed once watching, then whenever the evidence may have
// changed, in any process, until ctx ends or the store fails (sqldb.Watch):
// recognition follows new evidence within milliseconds.
func (s *Store) Watch(ctx context.Context, changed func()) error {
	return s.db.Watch(ctx, changesChannel, s.EvidenceVersion, changed)
}

func (s *Store) AllEvidence(ctx context.Context) ([]*matching.Evidence, error) {
	var rows []struct {
		ID          string `db:"id"`
		CigarID     string `db:"cigar_id"`
		Source      string `db:"source"`
		Fingerprint string `db:"fingerprint"`
		CreatedAt   int64  `db:"created_at"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, cigar_id, source, fingerprint, created_at FROM evidence ORDER BY id`); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	out := make([]*matching.Evidence, len(rows))
	for i, r := range rows {
		out[i] = &matching.Evidence{ID: r.ID, CigarID: r.CigarID, Source: r.Source, Fingerprint: []byte(r.Fingerprint), CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
	}
	return out, nil
}

// EvidenceVersion is the evidence's change counter (the row's ID an
// argument, so that its statement is prepared once).
func (s *Store) EvidenceVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.GetContext(ctx, &v, s.db.Rebind(`SELECT version FROM evidence_version WHERE id = ?`), 1)
	return v, err
}

func (s *Store) CountEvidence(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM evidence`)
	return n, err
}
