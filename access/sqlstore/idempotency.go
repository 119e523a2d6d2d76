package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/sqldb"
)

// Idempotency keeps idempotency records in the access store.
type Idempotency struct{ db *sqldb.DB }

var _ idempotency.Store = Idempotency{}

// Idempotency returns the store's idempotency records.
func (s *Store) Idempotency() Idempotency { return Idempotency{db: s.db} }

type idemRow struct {
	RequestHash string `db:"request_hash"`
	Done        bool   `db:"done"`
	LockedUntil int64  `db:"locked_until"`
	ExpiresAt   int64  `db:"expires_at"`
	Status      int    `db:"status"`
	Headers     string `db:"headers"`
	Body        string `db:"body"`
}

func (s Idempotency) Claim(ctx context.Context, r idempotency.Record, now time.Time) (*idempotency.Record, error) {
	var existing *idempotency.Record
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		// A lapsed record gives way: its response expired, or its request died
		// without finishing.
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM idempotency_records WHERE scope = ? AND idem_key = ?
			AND ((done AND expires_at <= ?) OR (NOT done AND locked_until <= ?))`), r.Scope, r.Key, now.UnixMilli(), now.UnixMilli()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO idempotency_records (scope, idem_key, request_hash, claim, done, locked_until, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope, idem_key) DO NOTHING`),
			r.Scope, r.Key, r.RequestHash, r.Token, false, r.LockedUntil.UnixMilli(), r.ExpiresAt.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var row idemRow
		if err := tx.GetContext(ctx, &row, tx.Rebind(`SELECT request_hash, done, locked_until, expires_at, status, headers, body
			FROM idempotency_records WHERE scope = ? AND idem_key = ?`), r.Scope, r.Key); err != nil {
			return err
		}
		existing = &idempotency.Record{Scope: r.Scope, Key: r.Key, RequestHash: row.RequestHash, Done: row.Done,
			LockedUntil: time.UnixMilli(row.LockedUntil).UTC(), ExpiresAt: time.UnixMilli(row.ExpiresAt).UTC()}
		if row.Done {
			resp := &idempotency.Response{Status: row.Status, Body: []byte(row.Body)}
			if err := json.Unmarshal([]byte(row.Headers), &resp.Header); err != nil {
				return fmt.Errorf("stored headers: %w", err)
			}
			existing.Response = resp
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	return existing, nil
}

func (s Idempotency) Finish(ctx context.Context, c idempotency.Claim, resp idempotency.Response, expiresAt time.Time) error {
	headers, _ := json.Marshal(resp.Header)
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE idempotency_records SET done = ?, expires_at = ?, status = ?, headers = ?, body = ?
		WHERE scope = ? AND idem_key = ? AND claim = ? AND NOT done`), true, expiresAt.UnixMilli(), resp.Status, string(headers), string(resp.Body), c.Scope, c.Key, c.Token)
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return idempotency.ErrClaimLost
	}
	return nil
}

func (s Idempotency) Release(ctx context.Context, c idempotency.Claim) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`DELETE FROM idempotency_records WHERE scope = ? AND idem_key = ? AND claim = ? AND NOT done`), c.Scope, c.Key, c.Token)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

func (s Idempotency) Purge(ctx context.Context, before time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`DELETE FROM idempotency_records WHERE expires_at <= ?`), before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("purge idempotency records: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
