package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// Claim takes the key in one statement: an insert that replaces a lapsed
// record (its response expired, or its request died without finishing) and
// leaves a live one alone. Only when a live record holds the key is it read,
// in a second statement. (It was a transaction of a delete, an insert and a
// read: four round trips to PostgreSQL on every paid request.)
func (s Idempotency) Claim(ctx context.Context, r idempotency.Record, now time.Time) (*idempotency.Record, error) {
	values := `VALUES (?, ?, ?, ?, ?, ?, ?, 0, '{}', '')`
	if s.db.Dialect == sqldb.Postgres {
		// The claim's commit does not wait for its WAL to reach the disk
		// (synchronous_commit off for this statement's transaction): an
		// idempotent request waits for one disk flush fewer (a payment
		// session's create, two instead of three). Nothing a client was told
		// is lost: Finish's commit is synchronous and flushes the claim's
		// WAL with its own before the response goes out; a claim lost in a
		// database crash before that belonged to a request that failed with
		// the database, which a retry runs afresh (a durable claim would
		// have answered it 409 until its lease ran out).
		values = `SELECT ?::text, ?::text, ?::text, ?::text, ?::boolean, ?::bigint, ?::bigint, 0, '{}', ''
			FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`
	}
	claim := s.db.Rebind(`INSERT INTO idempotency_records (scope, idem_key, request_hash, claim, done, locked_until, expires_at, status, headers, body)
		` + values + `
		ON CONFLICT (scope, idem_key) DO UPDATE SET request_hash = excluded.request_hash, claim = excluded.claim, done = excluded.done,
			locked_until = excluded.locked_until, expires_at = excluded.expires_at, status = 0, headers = '{}', body = ''
		WHERE (idempotency_records.done AND idempotency_records.expires_at <= ?) OR (NOT idempotency_records.done AND idempotency_records.locked_until <= ?)
		RETURNING claim`)
	read := s.db.Rebind(`SELECT request_hash, done, locked_until, expires_at, status, headers, body FROM idempotency_records WHERE scope = ? AND idem_key = ?`)
	// The live record may be released between the two statements: then the
	// key is free and the claim is tried again.
	for range 3 {
		var token string
		err := s.db.GetContext(ctx, &token, claim, r.Scope, r.Key, r.RequestHash, r.Token, false, r.LockedUntil.UnixMilli(), r.ExpiresAt.UnixMilli(),
			now.UnixMilli(), now.UnixMilli())
		if err == nil {
			return nil, nil
		}
		if !sqldb.IsNoRows(err) {
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		var row idemRow
		if err := s.db.GetContext(ctx, &row, read, r.Scope, r.Key); sqldb.IsNoRows(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read idempotency record: %w", err)
		}
		existing := &idempotency.Record{Scope: r.Scope, Key: r.Key, RequestHash: row.RequestHash, Done: row.Done,
			LockedUntil: time.UnixMilli(row.LockedUntil).UTC(), ExpiresAt: time.UnixMilli(row.ExpiresAt).UTC()}
		if row.Done {
			resp := &idempotency.Response{Status: row.Status, Body: []byte(row.Body)}
			if err := json.Unmarshal([]byte(row.Headers), &resp.Header); err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
			existing.Response = resp
		}
		return existing, nil
	}
	return nil, fmt.Errorf("claim idempotency key: the record kept changing")
}

// Finish stores the response in one UPDATE that leaves expires_at, and so
// its index, as the claim wrote it: a claim's expiry already covers a
// response finished within its lease (idempotency.Service.Begin). Only a
// response finished later than that has its expiry moved, in a second UPDATE.
// (Moving it on every finish rewrote an index entry per paid request: a
// payment session's create and status cost 5-10% more on SQLite.)
func (s Idempotency) Finish(ctx context.Context, c idempotency.Claim, resp idempotency.Response, expiresAt time.Time) error {
	headers, _ := json.Marshal(resp.Header)
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE idempotency_records SET done = ?, status = ?, headers = ?, body = ?
		WHERE scope = ? AND idem_key = ? AND claim = ? AND NOT done AND expires_at >= ?`), true, resp.Status, string(headers), string(resp.Body),
		c.Scope, c.Key, c.Token, expiresAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	res, err = s.db.ExecContext(ctx, s.db.Rebind(`UPDATE idempotency_records SET done = ?, expires_at = ?, status = ?, headers = ?, body = ?
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
