package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vitolahq/vitola/subgraphs/payments"
)

// A payment session's create keeps its Idempotency-Key in the transaction
// that writes the session: one commit where a claim, the work and a finish
// in another store made three (SQLite) or three round trips (PostgreSQL).

// keyClaim writes a create's key, replacing one that expired (the last
// argument is the create's time); a live key is left alone: no row.
const keyClaim = `INSERT INTO payment_session_keys (client_id, idem_key, request_hash, session_id, token, document, expires_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (client_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash, session_id = excluded.session_id,
		token = excluded.token, document = excluded.document, expires_at = excluded.expires_at
	WHERE payment_session_keys.expires_at <= ?`

func keyArgs(k *payments.KeptCreate) []any {
	return []any{k.ClientID, k.Key, k.RequestHash, k.SessionID, k.Token, string(k.Document), k.ExpiresAt.UnixMilli()}
}

// errKeyHeld ends a create's transaction when its key holds an earlier one.
var errKeyHeld = errors.New("the key holds an earlier create")

// onlyIfKept makes an INSERT … VALUES (…) of the create write nothing
// unless the statement's key claim (the CTE kept) wrote a row.
func onlyIfKept(insert string) string {
	i := strings.Index(insert, " VALUES (")
	if i < 0 || !strings.HasSuffix(insert, ")") {
		panic("onlyIfKept: not an INSERT … VALUES (…): " + insert)
	}
	return insert[:i] + " SELECT " + insert[i+len(" VALUES ("):len(insert)-1] + " WHERE EXISTS (SELECT 1 FROM kept)"
}

// createKeptPostgres writes the key, the purchase and the session in one
// statement. When a live key holds an earlier create (a concurrent one with
// the same key waits for the first to commit), nothing is written and the
// earlier create is read.
func (s *Store) createKeptPostgres(ctx context.Context, sess *payments.Session, pq string, pargs, sessArgs []any, kept *payments.KeptCreate) (*payments.KeptCreate, error) {
	query := s.db.Rebind(`WITH kept AS (` + keyClaim + ` RETURNING 1), purchase AS (` + onlyIfKept(pq) + `) ` + onlyIfKept(sessionInsert))
	args := append(append(append(keyArgs(kept), sess.CreatedAt.UnixMilli()), pargs...), sessArgs...)
	// The earlier create's key may expire between the statement and the read:
	// then the key is free again, and the create is tried again.
	for range 3 {
		res, err := s.db.ExecContext(ctx, query, args...)
		if err != nil {
			return nil, fmt.Errorf("write payment session: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil, nil
		}
		earlier, err := readKept(ctx, s.db, kept.ClientID, kept.Key, sess.CreatedAt)
		if !errors.Is(err, payments.ErrNotFound) {
			return earlier, err
		}
	}
	return nil, errors.New("write payment session: its key kept changing")
}

type keptRow struct {
	RequestHash string `db:"request_hash"`
	SessionID   string `db:"session_id"`
	Token       string `db:"token"`
	Document    string `db:"document"`
	ExpiresAt   int64  `db:"expires_at"`
}

func readKept(ctx context.Context, db q, clientID, key string, now time.Time) (*payments.KeptCreate, error) {
	var r keptRow
	if err := getOne(ctx, db, &r, "payment session key", `SELECT request_hash, session_id, token, document, expires_at FROM payment_session_keys
		WHERE client_id = ? AND idem_key = ? AND expires_at > ?`, clientID, key, now.UnixMilli()); err != nil {
		return nil, err
	}
	return &payments.KeptCreate{ClientID: clientID, Key: key, RequestHash: r.RequestHash, SessionID: r.SessionID, Token: r.Token,
		Document: payments.Document(r.Document), ExpiresAt: fromMillis(r.ExpiresAt)}, nil
}

func (s *Store) KeptCreate(ctx context.Context, clientID, key string, now time.Time) (*payments.KeptCreate, error) {
	return readKept(ctx, s.db, clientID, key, now)
}

func (s *Store) ForgetKeptCreates(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`DELETE FROM payment_session_keys WHERE expires_at <= ?`), now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("forget payment session keys: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
