package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

type accountRow struct {
	ID        string  `db:"id"`
	KeyID     *string `db:"key_id"`
	ClientID  *string `db:"client_id"`
	Reference *string `db:"reference"`
	CreatedAt int64   `db:"created_at"`
}

func (r accountRow) account() *payments.Account {
	a := &payments.Account{ID: r.ID, CreatedAt: fromMillis(r.CreatedAt), Balances: map[string]payments.Balance{}}
	if r.KeyID != nil {
		a.KeyID = *r.KeyID
	}
	if r.ClientID != nil {
		a.ClientID = *r.ClientID
	}
	if r.Reference != nil {
		a.Reference = *r.Reference
	}
	return a
}

const accountColumns = `id, key_id, client_id, reference, created_at`

// q is what both a transaction and the store answer queries with.
type q interface {
	sqlx.ExtContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// readAccount reads an account and its balances.
func readAccount(ctx context.Context, db q, where string, args ...any) (*payments.Account, error) {
	var r accountRow
	err := db.GetContext(ctx, &r, db.Rebind(`SELECT `+accountColumns+` FROM billing_accounts WHERE `+where), args...)
	if sqldb.IsNoRows(err) {
		return nil, payments.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read billing account: %w", err)
	}
	a := r.account()
	var books []struct {
		ResourceType string `db:"resource_type"`
		Kind         string `db:"kind"`
		Balance      int64  `db:"balance"`
	}
	if err := db.SelectContext(ctx, &books, db.Rebind(`SELECT resource_type, kind, balance FROM ledger_books WHERE owner = ?`), a.ID); err != nil {
		return nil, fmt.Errorf("read balances: %w", err)
	}
	for _, b := range books {
		bal := a.Balances[b.ResourceType]
		switch b.Kind {
		case payments.BookAvailable:
			bal.Available = b.Balance
		case payments.BookHeld:
			bal.Held = b.Balance
		}
		a.Balances[b.ResourceType] = bal
	}
	return a, nil
}

// readAccountRow reads an account without its balances; nil when there is
// none.
func readAccountRow(ctx context.Context, db q, id string) (*payments.Account, error) {
	var r accountRow
	err := getOne(ctx, db, &r, "billing account", `SELECT `+accountColumns+` FROM billing_accounts WHERE id = ?`, id)
	if errors.Is(err, payments.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.account(), nil
}

func (s *Store) Account(ctx context.Context, keyID string) (*payments.Account, error) {
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		a, err = s.keyAccount(ctx, tx, keyID)
		return err
	})
	return a, err
}

func (s *Store) AccountByID(ctx context.Context, id string) (*payments.Account, error) {
	return readAccount(ctx, s.db, `id = ?`, id)
}

func (s *Store) ClientAccount(ctx context.Context, clientID, reference string) (*payments.Account, error) {
	if clientID == "" || reference == "" {
		return nil, errors.New("client billing account: no client or reference")
	}
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO billing_accounts (id, client_id, reference, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (client_id, reference) DO NOTHING`), ids.New(ids.BillingAccount), clientID, reference, s.millis()); err != nil {
			return fmt.Errorf("open billing account: %w", err)
		}
		var err error
		a, err = readAccount(ctx, tx, `client_id = ? AND reference = ?`, clientID, reference)
		return err
	})
	return a, err
}

// keyAccount finds or creates the key's account inside tx.
func (s *Store) keyAccount(ctx context.Context, tx *sqlx.Tx, keyID string) (*payments.Account, error) {
	if keyID == "" {
		return nil, errors.New("billing account: no developer key")
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO billing_accounts (id, key_id, created_at) VALUES (?, ?, ?) ON CONFLICT (key_id) DO NOTHING`),
		ids.New(ids.BillingAccount), keyID, s.millis()); err != nil {
		return nil, fmt.Errorf("open billing account: %w", err)
	}
	return readAccount(ctx, tx, `key_id = ?`, keyID)
}

func bookID(owner, resourceType, kind string) string { return owner + "/" + resourceType + "/" + kind }

// post writes a balanced transaction and moves its books, in tx. A posting
// that would take an account's book below zero changes nothing and fails with
// ErrInsufficientCredits (the caller's transaction rolls back).
func (s *Store) post(ctx context.Context, tx *sqlx.Tx, t payments.Transaction) error {
	var sum int64
	for _, p := range t.Postings {
		sum += p.Amount
	}
	if sum != 0 || len(t.Postings) < 2 {
		return fmt.Errorf("ledger: an unbalanced %s transaction (postings sum to %d)", t.Kind, sum)
	}
	txID := ids.New(ids.LedgerTransaction)
	var account *string
	if t.AccountID != "" {
		account = &t.AccountID
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO ledger_transactions (id, kind, account_id, reference, note, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
		txID, t.Kind, account, t.Reference, t.Note, s.millis()); err != nil {
		return fmt.Errorf("write ledger transaction: %w", err)
	}
	// Books are updated in one order, so two transactions never wait for each
	// other's rows in opposite orders (no deadlock on PostgreSQL).
	postings := append([]payments.Posting(nil), t.Postings...)
	sort.Slice(postings, func(i, j int) bool {
		return bookID(postings[i].Owner, postings[i].ResourceType, postings[i].Book) < bookID(postings[j].Owner, postings[j].ResourceType, postings[j].Book)
	})
	for _, p := range postings {
		id := bookID(p.Owner, p.ResourceType, p.Book)
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO ledger_books (id, owner, resource_type, kind, balance) VALUES (?, ?, ?, ?, 0) ON CONFLICT (id) DO NOTHING`),
			id, p.Owner, p.ResourceType, p.Book); err != nil {
			return fmt.Errorf("open ledger book: %w", err)
		}
		if p.Owner != payments.PlatformOwner && p.Amount != 0 {
			res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE ledger_books SET balance = balance + ? WHERE id = ? AND balance + ? >= 0`), p.Amount, id, p.Amount)
			if err != nil {
				return fmt.Errorf("move ledger book: %w", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return payments.ErrInsufficientCredits
			}
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO ledger_postings (id, transaction_id, book_id, amount) VALUES (?, ?, ?, ?)`),
			ids.New(ids.LedgerPosting), txID, id, p.Amount); err != nil {
			return fmt.Errorf("write ledger posting: %w", err)
		}
	}
	return nil
}

// move is a transaction between an account's books and a platform book, in
// the account's resource type.
func move(kind, accountID, reference, note, resourceType string, legs ...payments.Posting) payments.Transaction {
	for i := range legs {
		legs[i].ResourceType = resourceType
	}
	return payments.Transaction{Kind: kind, AccountID: accountID, Reference: reference, Note: note, Postings: legs}
}

func own(accountID, book string, amount int64) payments.Posting {
	return payments.Posting{Owner: accountID, Book: book, Amount: amount}
}

func platform(book string, amount int64) payments.Posting {
	return payments.Posting{Owner: payments.PlatformOwner, Book: book, Amount: amount}
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
		acc, err := s.keyAccount(ctx, tx, keyID)
		if err != nil {
			return err
		}
		if err := s.post(ctx, tx, move(payments.TxGrant, acc.ID, "", note, payments.AICredits,
			platform(payments.BookGranted, -amount), own(acc.ID, payments.BookAvailable, amount))); err != nil {
			return err
		}
		a, err = readAccount(ctx, tx, `id = ?`, acc.ID)
		return err
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
		acc, err := s.keyAccount(ctx, tx, keyID)
		if err != nil {
			return err
		}
		a = acc
		r.AccountID = acc.ID
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO credit_reservations (id, account_id, amount, state, reference, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			r.ID, acc.ID, amount, payments.Held, reference, r.CreatedAt.UnixMilli(), r.ExpiresAt.UnixMilli()); err != nil {
			return fmt.Errorf("write reservation: %w", err)
		}
		if err := s.post(ctx, tx, move(payments.TxHold, acc.ID, r.ID, reference, payments.AICredits,
			own(acc.ID, payments.BookAvailable, -amount), own(acc.ID, payments.BookHeld, amount))); err != nil {
			return err
		}
		if a, err = readAccount(ctx, tx, `id = ?`, acc.ID); err != nil {
			return err
		}
		// The hold is the debit that may take the balance below an
		// auto-reload rule's threshold.
		return s.queueReload(ctx, tx, a.ID, payments.AICredits, a.Balances[payments.AICredits].Available)
	})
	if err != nil {
		return nil, a, err
	}
	return r, a, nil
}

// close moves a held reservation of the key's account to state, giving back
// what was not charged, in one transaction.
func (s *Store) close(ctx context.Context, keyID, reservationID, state string, cost *int64) (*payments.Account, error) {
	var a *payments.Account
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		acc, err := s.keyAccount(ctx, tx, keyID)
		if err != nil {
			return err
		}
		a = acc
		var r struct {
			Amount int64  `db:"amount"`
			Cost   *int64 `db:"cost"`
			State  string `db:"state"`
		}
		err = tx.GetContext(ctx, &r, tx.Rebind(`SELECT amount, cost, state FROM credit_reservations WHERE id = ? AND account_id = ?`), reservationID, acc.ID)
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
		t := move(payments.TxRelease, acc.ID, reservationID, "", payments.AICredits,
			own(acc.ID, payments.BookHeld, -r.Amount), own(acc.ID, payments.BookAvailable, r.Amount))
		if cost != nil {
			if err := checkAmount(*cost, true); err != nil || *cost > r.Amount {
				return fmt.Errorf("%w: a cost of %d exceeds the %d credits reserved", payments.ErrBadAmount, *cost, r.Amount)
			}
			t = move(payments.TxSettle, acc.ID, reservationID, "", payments.AICredits,
				own(acc.ID, payments.BookHeld, -r.Amount), platform(payments.BookConsumed, *cost), own(acc.ID, payments.BookAvailable, r.Amount-*cost))
		}
		// The state guard makes closing race-safe: of two closes, one updates.
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE credit_reservations SET state = ?, cost = ? WHERE id = ? AND state = ?`), state, cost, reservationID, payments.Held)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payments.ErrClosed
		}
		return s.post(ctx, tx, t)
	})
	if err != nil {
		return a, err
	}
	return s.AccountByID(ctx, a.ID)
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
		WHERE r.state = ? AND r.expires_at <= ? AND a.key_id IS NOT NULL ORDER BY r.expires_at LIMIT 500`), payments.Held, now.UnixMilli()); err != nil {
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

func (s *Store) Transactions(ctx context.Context, accountID string) ([]payments.Transaction, error) {
	var rows []struct {
		ID           string `db:"id"`
		Kind         string `db:"kind"`
		Reference    string `db:"reference"`
		Note         string `db:"note"`
		CreatedAt    int64  `db:"created_at"`
		Owner        string `db:"owner"`
		ResourceType string `db:"resource_type"`
		Book         string `db:"book"`
		Amount       int64  `db:"amount"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT t.id, t.kind, t.reference, t.note, t.created_at, b.owner, b.resource_type, b.kind AS book, p.amount
		FROM ledger_transactions t JOIN ledger_postings p ON p.transaction_id = t.id JOIN ledger_books b ON b.id = p.book_id
		WHERE t.account_id = ? ORDER BY t.created_at, t.id, p.id`), accountID); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	var out []payments.Transaction
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].ID != r.ID {
			out = append(out, payments.Transaction{ID: r.ID, Kind: r.Kind, AccountID: accountID, Reference: r.Reference, Note: r.Note, CreatedAt: fromMillis(r.CreatedAt)})
		}
		t := &out[len(out)-1]
		t.Postings = append(t.Postings, payments.Posting{Owner: r.Owner, ResourceType: r.ResourceType, Book: r.Book, Amount: r.Amount})
	}
	return out, nil
}

// LedgerCheck is the whole ledger's bookkeeping, for tests and audits.
type LedgerCheck struct {
	// Unbalanced counts transactions whose postings do not sum to zero.
	Unbalanced int
	// Drifted counts account books whose kept balance is not the sum of their
	// postings; Negative those below zero.
	Drifted  int
	Negative int
	// Total is the sum of every posting (zero when every transaction balances).
	Total int64
}

// CheckLedger recomputes the ledger from its postings.
func (s *Store) CheckLedger(ctx context.Context) (LedgerCheck, error) {
	var c LedgerCheck
	if err := s.db.GetContext(ctx, &c.Unbalanced, `SELECT COUNT(*) FROM (SELECT transaction_id FROM ledger_postings GROUP BY transaction_id HAVING SUM(amount) <> 0) u`); err != nil {
		return c, err
	}
	if err := s.db.GetContext(ctx, &c.Drifted, s.db.Rebind(`SELECT COUNT(*) FROM ledger_books b WHERE b.owner <> ? AND b.balance <> COALESCE((SELECT SUM(p.amount) FROM ledger_postings p WHERE p.book_id = b.id), 0)`), payments.PlatformOwner); err != nil {
		return c, err
	}
	if err := s.db.GetContext(ctx, &c.Negative, s.db.Rebind(`SELECT COUNT(*) FROM ledger_books WHERE owner <> ? AND balance < 0`), payments.PlatformOwner); err != nil {
		return c, err
	}
	if err := s.db.GetContext(ctx, &c.Total, `SELECT COALESCE(SUM(amount), 0) FROM ledger_postings`); err != nil {
		return c, err
	}
	return c, nil
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
		CreatedAt: fromMillis(r.CreatedAt), ExpiresAt: fromMillis(r.ExpiresAt)}, nil
}
