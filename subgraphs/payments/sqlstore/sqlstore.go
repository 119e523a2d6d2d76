// Package sqlstore keeps the payments subgraph's data in its own SQL store.
package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the payments store's goose migrations.
var Migrations, _ = fs.Sub(migrationFiles, "migrations")

// StoreName is the payments store's SQLite file and PostgreSQL schema name.
const StoreName = "payments"

// Store implements payments.Ledger.
type Store struct {
	db  *sqldb.DB
	now func() time.Time
}

var _ payments.Ledger = (*Store)(nil)

// Open opens and migrates the payments store.
func Open(ctx context.Context, cfg sqldb.Config) (*Store, error) {
	db, err := sqldb.Open(ctx, cfg, StoreName, Migrations)
	if err != nil {
		return nil, err
	}
	return New(db, time.Now), nil
}

// New wraps an open store; now stamps entries (tests inject a clock).
func New(db *sqldb.DB, now func() time.Time) *Store { return &Store{db: db, now: now} }

func (s *Store) Close() error                   { return s.db.Close() }
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

type accountRow struct {
	ID        string `db:"id"`
	KeyID     string `db:"key_id"`
	Balance   int64  `db:"balance"`
	CreatedAt int64  `db:"created_at"`
}

func (r accountRow) account() *payments.Account {
	return &payments.Account{ID: r.ID, KeyID: r.KeyID, Balance: r.Balance, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
}

func (s *Store) Account(ctx context.Context, keyID string) (*payments.Account, error) {
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		a, err = s.account(ctx, tx, keyID)
		return err
	})
	return a, err
}

// account finds or creates the key's account inside tx.
func (s *Store) account(ctx context.Context, tx *sqlx.Tx, keyID string) (*payments.Account, error) {
	if keyID == "" {
		return nil, errors.New("billing account: no developer key")
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO billing_accounts (id, key_id, balance, created_at) VALUES (?, ?, 0, ?) ON CONFLICT (key_id) DO NOTHING`),
		ids.New(ids.BillingAccount), keyID, s.now().UnixMilli()); err != nil {
		return nil, fmt.Errorf("open billing account: %w", err)
	}
	var r accountRow
	if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT id, key_id, balance, created_at FROM billing_accounts WHERE key_id = ?`), keyID); err != nil {
		return nil, fmt.Errorf("read billing account: %w", err)
	}
	return r.account(), nil
}

// move changes an account's balance by amount and writes the entry, in tx. A
// debit that would take the balance below zero changes nothing and fails with
// ErrInsufficientCredits.
func (s *Store) move(ctx context.Context, tx *sqlx.Tx, a *payments.Account, kind string, amount int64, reservationID *string, note string) error {
	res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE billing_accounts SET balance = balance + ? WHERE id = ? AND balance + ? >= 0`), amount, a.ID, amount)
	if err != nil {
		return fmt.Errorf("update balance: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrInsufficientCredits
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO ledger_entries (id, account_id, kind, amount, reservation_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		ids.New(ids.LedgerEntry), a.ID, kind, amount, reservationID, note, s.now().UnixMilli()); err != nil {
		return fmt.Errorf("write ledger entry: %w", err)
	}
	return tx.GetContext(ctx, &a.Balance, tx.Rebind(`SELECT balance FROM billing_accounts WHERE id = ?`), a.ID)
}

func checkAmount(n int64, zeroOK bool) error {
	if n < 0 || (n == 0 && !zeroOK) || n > payments.MaxAmount {
		return payments.ErrBadAmount
	}
	return nil
}

func (s *Store) Grant(ctx context.Context, keyID string, amount int64, note string) (*payments.Account, error) {
	if err := checkAmount(amount, false); err != nil {
		return nil, err
	}
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if a, err = s.account(ctx, tx, keyID); err != nil {
			return err
		}
		return s.move(ctx, tx, a, payments.EntryGrant, amount, nil, note)
	})
	return a, err
}

func (s *Store) Reserve(ctx context.Context, keyID string, amount int64, reference string, expiresAt time.Time) (*payments.Reservation, *payments.Account, error) {
	if err := checkAmount(amount, false); err != nil {
		return nil, nil, err
	}
	var a *payments.Account
	r := &payments.Reservation{ID: ids.New(ids.CreditReservation), Amount: amount, State: payments.Held, Reference: reference,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond), ExpiresAt: expiresAt.UTC().Truncate(time.Millisecond)}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if a, err = s.account(ctx, tx, keyID); err != nil {
			return err
		}
		r.AccountID = a.ID
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO credit_reservations (id, account_id, amount, state, reference, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			r.ID, a.ID, amount, payments.Held, reference, r.CreatedAt.UnixMilli(), r.ExpiresAt.UnixMilli()); err != nil {
			return fmt.Errorf("write reservation: %w", err)
		}
		return s.move(ctx, tx, a, payments.EntryReserve, -amount, &r.ID, reference)
	})
	if err != nil {
		return nil, a, err
	}
	return r, a, nil
}

// close moves a held reservation of the key's account to state, giving back
// refund credits, in one transaction.
func (s *Store) close(ctx context.Context, keyID, reservationID, state string, cost *int64) (*payments.Account, error) {
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if a, err = s.account(ctx, tx, keyID); err != nil {
			return err
		}
		var r struct {
			Amount int64  `db:"amount"`
			Cost   *int64 `db:"cost"`
			State  string `db:"state"`
		}
		err = tx.GetContext(ctx, &r, tx.Rebind(`SELECT amount, cost, state FROM credit_reservations WHERE id = ? AND account_id = ?`), reservationID, a.ID)
		if sqldb.IsNoRows(err) {
			return payments.ErrNotFound // another key's reservation is not found either
		}
		if err != nil {
			return err
		}
		// Closing again the same way is a retry whose first answer was lost: it
		// succeeds and moves nothing.
		if r.State == state && (cost == nil || (r.Cost != nil && *r.Cost == *cost)) {
			return nil
		}
		refund, kind := r.Amount, payments.EntryRelease
		if cost != nil {
			if err := checkAmount(*cost, true); err != nil || *cost > r.Amount {
				return fmt.Errorf("%w: a cost of %d exceeds the %d credits reserved", payments.ErrBadAmount, *cost, r.Amount)
			}
			refund, kind = r.Amount-*cost, payments.EntrySettle
		}
		// The state guard makes closing race-safe: of two closes, one updates.
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE credit_reservations SET state = ?, cost = ? WHERE id = ? AND state = ?`), state, cost, reservationID, payments.Held)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payments.ErrClosed
		}
		return s.move(ctx, tx, a, kind, refund, &reservationID, "")
	})
	return a, err
}

func (s *Store) Settle(ctx context.Context, keyID, reservationID string, cost int64) (*payments.Account, error) {
	return s.close(ctx, keyID, reservationID, payments.Settled, &cost)
}

func (s *Store) Release(ctx context.Context, keyID, reservationID string) (*payments.Account, error) {
	return s.close(ctx, keyID, reservationID, payments.Released, nil)
}

func (s *Store) ReleaseExpired(ctx context.Context, now time.Time) (int, error) {
	var due []struct {
		ID    string `db:"id"`
		KeyID string `db:"key_id"`
	}
	if err := s.db.SelectContext(ctx, &due, s.db.Rebind(`SELECT r.id, a.key_id FROM credit_reservations r JOIN billing_accounts a ON a.id = r.account_id
		WHERE r.state = ? AND r.expires_at <= ? ORDER BY r.expires_at LIMIT 500`), payments.Held, now.UnixMilli()); err != nil {
		return 0, fmt.Errorf("find expired reservations: %w", err)
	}
	n := 0
	for _, d := range due {
		switch _, err := s.Release(ctx, d.KeyID, d.ID); {
		case err == nil:
			n++
		case errors.Is(err, payments.ErrClosed): // settled meanwhile, or another replica released it
		default:
			return n, err
		}
	}
	return n, nil
}

func (s *Store) Entries(ctx context.Context, accountID string) ([]payments.Entry, error) {
	var rows []struct {
		ID            string  `db:"id"`
		AccountID     string  `db:"account_id"`
		Kind          string  `db:"kind"`
		Amount        int64   `db:"amount"`
		ReservationID *string `db:"reservation_id"`
		Note          string  `db:"note"`
		CreatedAt     int64   `db:"created_at"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT id, account_id, kind, amount, reservation_id, note, created_at FROM ledger_entries
		WHERE account_id = ? ORDER BY created_at, id`), accountID); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	out := make([]payments.Entry, len(rows))
	for i, r := range rows {
		out[i] = payments.Entry{ID: r.ID, AccountID: r.AccountID, Kind: r.Kind, Amount: r.Amount, ReservationID: r.ReservationID, Note: r.Note, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
	}
	return out, nil
}

func (s *Store) Reservation(ctx context.Context, keyID, reservationID string) (*payments.Reservation, error) {
	return s.reservation(ctx, `r.id = ? AND a.key_id = ?`, reservationID, keyID)
}

func (s *Store) LatestReservation(ctx context.Context, keyID, reference string, since time.Time) (*payments.Reservation, error) {
	return s.reservation(ctx, `a.key_id = ? AND r.reference = ? AND r.created_at >= ? ORDER BY r.created_at DESC, r.id DESC LIMIT 1`,
		keyID, reference, since.UnixMilli())
}

// reservation reads the one reservation (of a key's account) that where picks.
func (s *Store) reservation(ctx context.Context, where string, args ...any) (*payments.Reservation, error) {
	var r struct {
		ID        string `db:"id"`
		AccountID string `db:"account_id"`
		Amount    int64  `db:"amount"`
		Cost      *int64 `db:"cost"`
		State     string `db:"state"`
		Reference string `db:"reference"`
		CreatedAt int64  `db:"created_at"`
		ExpiresAt int64  `db:"expires_at"`
	}
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`SELECT r.id, r.account_id, r.amount, r.cost, r.state, r.reference, r.created_at, r.expires_at
		FROM credit_reservations r JOIN billing_accounts a ON a.id = r.account_id WHERE `+where), args...)
	if sqldb.IsNoRows(err) {
		return nil, payments.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &payments.Reservation{ID: r.ID, AccountID: r.AccountID, Amount: r.Amount, Cost: r.Cost, State: r.State, Reference: r.Reference,
		CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), ExpiresAt: time.UnixMilli(r.ExpiresAt).UTC()}, nil
}
