package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

type sessionRow struct {
	ID           string `db:"id"`
	ClientID     string `db:"client_id"`
	AccountID    string `db:"account_id"`
	OfferID      string `db:"offer_id"`
	PurchaseID   string `db:"purchase_id"`
	TokenHash    string `db:"token_hash"`
	ReturnURL    string `db:"return_url"`
	CancelURL    string `db:"cancel_url"`
	ParentOrigin string `db:"parent_origin"`
	State        string `db:"state"`
	ExpiresAt    int64  `db:"expires_at"`
	CreatedAt    int64  `db:"created_at"`
	RedeemedAt   *int64 `db:"redeemed_at"`
	ClosedAt     *int64 `db:"closed_at"`
}

const sessionColumns = `id, client_id, account_id, offer_id, purchase_id, token_hash, return_url, cancel_url, parent_origin, state, expires_at, created_at, redeemed_at, closed_at`

// fields are the row's columns in sessionColumns' order, for Scan.
func (r *sessionRow) fields() []any {
	return []any{&r.ID, &r.ClientID, &r.AccountID, &r.OfferID, &r.PurchaseID, &r.TokenHash, &r.ReturnURL, &r.CancelURL, &r.ParentOrigin,
		&r.State, &r.ExpiresAt, &r.CreatedAt, &r.RedeemedAt, &r.ClosedAt}
}

func (r sessionRow) session() *payments.Session {
	return &payments.Session{ID: r.ID, ClientID: r.ClientID, AccountID: r.AccountID, OfferID: r.OfferID, PurchaseID: r.PurchaseID, TokenHash: r.TokenHash,
		ReturnURL: r.ReturnURL, CancelURL: r.CancelURL, ParentOrigin: r.ParentOrigin, State: r.State, ExpiresAt: fromMillis(r.ExpiresAt),
		CreatedAt: fromMillis(r.CreatedAt), RedeemedAt: optMillis(r.RedeemedAt), ClosedAt: optMillis(r.ClosedAt)}
}

type purchaseRow struct {
	ID              string  `db:"id"`
	Kind            string  `db:"kind"`
	ClientID        string  `db:"client_id"`
	AccountID       string  `db:"account_id"`
	OfferID         string  `db:"offer_id"`
	SessionID       *string `db:"session_id"`
	ResourceType    string  `db:"resource_type"`
	Quantity        int64   `db:"quantity"`
	Amount          int64   `db:"amount"`
	Currency        string  `db:"currency"`
	MerchantID      string  `db:"merchant_account_id"`
	PaymentMethodID *string `db:"payment_method_id"`
	State           string  `db:"state"`
	ChargeID        *string `db:"charge_id"`
	AttemptKey      *string `db:"attempt_key"`
	Attempts        int     `db:"attempts"`
	FailureCode     *string `db:"failure_code"`
	FailureMessage  *string `db:"failure_message"`
	CreatedAt       int64   `db:"created_at"`
	UpdatedAt       int64   `db:"updated_at"`
}

const purchaseColumns = `id, kind, client_id, account_id, offer_id, session_id, resource_type, quantity, amount, currency, merchant_account_id,
	payment_method_id, state, charge_id, attempt_key, attempts, failure_code, failure_message, created_at, updated_at`

// fields are the row's columns in purchaseColumns' order, for Scan.
func (r *purchaseRow) fields() []any {
	return []any{&r.ID, &r.Kind, &r.ClientID, &r.AccountID, &r.OfferID, &r.SessionID, &r.ResourceType, &r.Quantity, &r.Amount, &r.Currency,
		&r.MerchantID, &r.PaymentMethodID, &r.State, &r.ChargeID, &r.AttemptKey, &r.Attempts, &r.FailureCode, &r.FailureMessage, &r.CreatedAt, &r.UpdatedAt}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nullable stores "" as NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (r purchaseRow) purchase() *payments.Purchase {
	return &payments.Purchase{ID: r.ID, Kind: r.Kind, ClientID: r.ClientID, AccountID: r.AccountID, OfferID: r.OfferID, SessionID: str(r.SessionID),
		ResourceType: r.ResourceType, Quantity: r.Quantity, Amount: r.Amount, Currency: r.Currency, MerchantID: r.MerchantID,
		PaymentMethodID: str(r.PaymentMethodID), State: r.State, ChargeID: str(r.ChargeID), AttemptKey: str(r.AttemptKey), Attempts: r.Attempts,
		FailureCode: str(r.FailureCode), FailureMessage: str(r.FailureMessage), CreatedAt: fromMillis(r.CreatedAt), UpdatedAt: fromMillis(r.UpdatedAt)}
}

// purchaseInsert is the statement and arguments that write a new purchase.
func purchaseInsert(p *payments.Purchase) (string, []any) {
	return `INSERT INTO purchases (` + purchaseColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{p.ID, p.Kind, p.ClientID, p.AccountID, p.OfferID, nullable(p.SessionID), p.ResourceType,
			p.Quantity, p.Amount, p.Currency, p.MerchantID, nullable(p.PaymentMethodID), p.State, nullable(p.ChargeID), nullable(p.AttemptKey),
			p.Attempts, nullable(p.FailureCode), nullable(p.FailureMessage), p.CreatedAt.UnixMilli(), p.UpdatedAt.UnixMilli()}
}

// insertPurchase writes a new purchase in tx; ignoreConflict lets a unique
// index (one open reload per account) drop it silently. It reports whether
// the row was written.
func insertPurchase(ctx context.Context, tx *sqlx.Tx, p *payments.Purchase, ignoreConflict bool) (bool, error) {
	query, args := purchaseInsert(p)
	if ignoreConflict {
		query += ` ON CONFLICT DO NOTHING`
	}
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return false, fmt.Errorf("write purchase: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

const sessionInsert = `INSERT INTO payment_sessions (` + sessionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func (s *Store) CreateSession(ctx context.Context, sess *payments.Session, p *payments.Purchase, kept *payments.KeptCreate) (*payments.KeptCreate, error) {
	sessArgs := []any{sess.ID, sess.ClientID, sess.AccountID, sess.OfferID, sess.PurchaseID, sess.TokenHash, sess.ReturnURL, sess.CancelURL, sess.ParentOrigin,
		sess.State, sess.ExpiresAt.UnixMilli(), sess.CreatedAt.UnixMilli(), nil, nil}
	pq, pargs := purchaseInsert(p)
	if s.db.Dialect == sqldb.Postgres {
		// One statement, its own transaction: one round trip instead of four
		// (BEGIN, two INSERTs, COMMIT) or six with the key. The session's
		// foreign key to the purchase is checked at the statement's end,
		// when both rows exist.
		if kept == nil {
			if _, err := s.db.ExecContext(ctx, s.db.Rebind(`WITH purchase AS (`+pq+`) `+sessionInsert), append(pargs, sessArgs...)...); err != nil {
				return nil, fmt.Errorf("write payment session: %w", err)
			}
			return nil, nil
		}
		return s.createKeptPostgres(ctx, sess, pq, pargs, sessArgs, kept)
	}
	var earlier *payments.KeptCreate
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if kept != nil {
			// The transaction holds SQLite's write lock from its start: a
			// concurrent create with the same key waits, then finds this one.
			res, err := tx.ExecContext(ctx, tx.Rebind(keyClaim), append(keyArgs(kept), sess.CreatedAt.UnixMilli())...)
			if err != nil {
				return fmt.Errorf("write payment session key: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				if earlier, err = readKept(ctx, tx, kept.ClientID, kept.Key, sess.CreatedAt); err != nil {
					return err
				}
				return errKeyHeld
			}
		}
		if _, err := insertPurchase(ctx, tx, p, false); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(sessionInsert), sessArgs...); err != nil {
			return fmt.Errorf("write payment session: %w", err)
		}
		return nil
	})
	if errors.Is(err, errKeyHeld) {
		return earlier, nil
	}
	return nil, err
}

func (s *Store) Session(ctx context.Context, id string) (*payments.Session, error) {
	var r sessionRow
	if err := getOne(ctx, s.db, &r, "payment session", `SELECT `+sessionColumns+` FROM payment_sessions WHERE id = ?`, id); err != nil {
		return nil, err
	}
	return r.session(), nil
}

// qualified qualifies columns with a table alias; named also names each
// alias.column, as sqlx maps a nested struct tagged alias.
func qualified(alias, columns string, named bool) string {
	var b strings.Builder
	for i, c := range strings.Split(columns, ",") {
		c = strings.TrimSpace(c)
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(alias + "." + c)
		if named {
			b.WriteString(` AS "` + alias + "." + c + `"`)
		}
	}
	return b.String()
}

// sessionWithPurchase is scanned column by column (the fields methods):
// every status read runs it, and mapping its 34 columns by name through
// reflection cost more than the read.
var sessionWithPurchase = `SELECT ` + qualified("s", sessionColumns, false) + `, ` + qualified("p", purchaseColumns, false) + `
	FROM payment_sessions s JOIN purchases p ON p.id = s.purchase_id WHERE s.id = ?`

func (s *Store) SessionWithPurchase(ctx context.Context, id string) (*payments.Session, *payments.Purchase, error) {
	var sr sessionRow
	var pr purchaseRow
	err := s.db.QueryRowContext(ctx, s.db.Rebind(sessionWithPurchase), id).Scan(append(sr.fields(), pr.fields()...)...)
	if sqldb.IsNoRows(err) {
		return nil, nil, payments.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read payment session: %w", err)
	}
	return sr.session(), pr.purchase(), nil
}

// sessionParts reads an offer with its merchant account and, beside them, an
// account's owner columns (NULL when there is no such account): one round
// trip for what a new session is checked against.
var sessionParts = `SELECT ` + qualified("o", offerColumns, true) + `, ` + qualified("m", merchantColumns, true) + `, ` + qualified("a", accountColumns, true) + `
	FROM offers o JOIN merchant_accounts m ON m.id = o.merchant_account_id LEFT JOIN billing_accounts a ON a.id = ? WHERE o.id = ?`

// accountOrNull is accountRow for a LEFT JOIN: every column may be NULL.
type accountOrNull struct {
	ID        *string `db:"id"`
	KeyID     *string `db:"key_id"`
	ClientID  *string `db:"client_id"`
	Reference *string `db:"reference"`
	CreatedAt *int64  `db:"created_at"`
}

func (s *Store) SessionParts(ctx context.Context, accountID, offerID string) (*payments.Account, *payments.Offer, *payments.MerchantAccount, error) {
	var r struct {
		O offerRow      `db:"o"`
		M merchantRow   `db:"m"`
		A accountOrNull `db:"a"`
	}
	err := getOne(ctx, s.db, &r, "offer", sessionParts, accountID, offerID)
	if errors.Is(err, payments.ErrNotFound) {
		// No such offer: the account alone (the rarer path).
		a, err := readAccountRow(ctx, s.db, accountID)
		return a, nil, nil, err
	}
	if err != nil {
		return nil, nil, nil, err
	}
	o, m := r.O.offer(), r.M.merchant()
	var a *payments.Account
	if r.A.ID != nil && r.A.CreatedAt != nil {
		a = accountRow{ID: *r.A.ID, KeyID: r.A.KeyID, ClientID: r.A.ClientID, Reference: r.A.Reference, CreatedAt: *r.A.CreatedAt}.account()
	}
	return a, &o, &m, nil
}

func (s *Store) Purchase(ctx context.Context, id string) (*payments.Purchase, error) {
	var r purchaseRow
	if err := getOne(ctx, s.db, &r, "purchase", `SELECT `+purchaseColumns+` FROM purchases WHERE id = ?`, id); err != nil {
		return nil, err
	}
	return r.purchase(), nil
}

// cancelSessionPurchase cancels a closed session's purchase (arguments: the
// cancelled state, the time, the session, the open state), found through the
// session's purchase_id: purchases have no index on session_id, and the one
// on state walked every open purchase, one per open session, for each
// session closed.
const cancelSessionPurchase = `UPDATE purchases SET state = ?, updated_at = ? WHERE id = (SELECT purchase_id FROM payment_sessions WHERE id = ?) AND state = ?`

func (s *Store) ExpireSessions(ctx context.Context, now time.Time) (int, error) {
	var due []string
	if err := s.db.SelectContext(ctx, &due, s.db.Rebind(`SELECT id FROM payment_sessions WHERE state IN (?, ?) AND expires_at <= ? ORDER BY expires_at LIMIT 500`),
		payments.SessionOpen, payments.SessionActive, now.UnixMilli()); err != nil {
		return 0, fmt.Errorf("find expired sessions: %w", err)
	}
	n := 0
	for _, id := range due {
		err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
			res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE payment_sessions SET state = ?, closed_at = ? WHERE id = ? AND state IN (?, ?)`),
				payments.SessionExpired, now.UnixMilli(), id, payments.SessionOpen, payments.SessionActive)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return nil // closed meanwhile
			}
			n++
			// Only a purchase nobody is paying is cancelled: one being charged
			// finishes, and its outcome stands.
			if _, err = tx.ExecContext(ctx, tx.Rebind(cancelSessionPurchase), payments.PurchaseCancelled, now.UnixMilli(), id, payments.PurchaseOpen); err != nil {
				return err
			}
			return s.emitSession(ctx, tx, id, payments.EventSessionExpired)
		})
		if err != nil {
			return n, fmt.Errorf("expire session: %w", err)
		}
	}
	return n, nil
}

func (s *Store) AddPaymentMethod(ctx context.Context, pm *payments.PaymentMethod) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if !pm.Default {
			var defaults int
			if err := tx.GetContext(ctx, &defaults, tx.Rebind(`SELECT COUNT(*) FROM payment_methods WHERE account_id = ? AND is_default = 1 AND deleted_at IS NULL`), pm.AccountID); err != nil {
				return err
			}
			pm.Default = defaults == 0
		}
		if pm.Default {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE payment_methods SET is_default = 0 WHERE account_id = ?`), pm.AccountID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO payment_methods (id, account_id, merchant_account_id, vault_ciphertext, vault_key, vault_kek,
			brand, last4, exp_month, exp_year, is_default, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			pm.ID, pm.AccountID, pm.MerchantID, pm.Vault.Ciphertext, pm.Vault.WrappedKey, pm.Vault.KEKID, pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear,
			flag(pm.Default), pm.CreatedAt.UnixMilli())
		if err != nil {
			return fmt.Errorf("save payment method: %w", err)
		}
		return nil
	})
}

type paymentMethodRow struct {
	ID         string `db:"id"`
	AccountID  string `db:"account_id"`
	MerchantID string `db:"merchant_account_id"`
	Ciphertext string `db:"vault_ciphertext"`
	WrappedKey string `db:"vault_key"`
	KEK        string `db:"vault_kek"`
	Brand      string `db:"brand"`
	Last4      string `db:"last4"`
	ExpMonth   int    `db:"exp_month"`
	ExpYear    int    `db:"exp_year"`
	Default    int    `db:"is_default"`
	CreatedAt  int64  `db:"created_at"`
}

const paymentMethodColumns = `id, account_id, merchant_account_id, vault_ciphertext, vault_key, vault_kek, brand, last4, exp_month, exp_year, is_default, created_at`

func (r paymentMethodRow) paymentMethod() *payments.PaymentMethod {
	return &payments.PaymentMethod{ID: r.ID, AccountID: r.AccountID, MerchantID: r.MerchantID,
		Vault: envelope.Sealed{Ciphertext: r.Ciphertext, WrappedKey: r.WrappedKey, KEKID: r.KEK}, Brand: r.Brand, Last4: r.Last4,
		ExpMonth: r.ExpMonth, ExpYear: r.ExpYear, Default: r.Default == 1, CreatedAt: fromMillis(r.CreatedAt)}
}

func (s *Store) PaymentMethod(ctx context.Context, accountID, id string) (*payments.PaymentMethod, error) {
	var r paymentMethodRow
	if err := getOne(ctx, s.db, &r, "payment method", `SELECT `+paymentMethodColumns+` FROM payment_methods WHERE id = ? AND account_id = ? AND deleted_at IS NULL`, id, accountID); err != nil {
		return nil, err
	}
	return r.paymentMethod(), nil
}

func (s *Store) SetAutoReload(ctx context.Context, r *payments.AutoReload) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO auto_reload_rules (account_id, client_id, enabled, threshold, offer_id, payment_method_id, failures, disabled_reason, retry_after, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, 0, '', 0, ?)
		ON CONFLICT (account_id) DO UPDATE SET client_id = excluded.client_id, enabled = excluded.enabled, threshold = excluded.threshold,
			offer_id = excluded.offer_id, payment_method_id = excluded.payment_method_id, failures = 0, disabled_reason = '', retry_after = 0, updated_at = excluded.updated_at`),
		r.AccountID, r.ClientID, flag(r.Enabled), r.Threshold, r.OfferID, r.PaymentMethodID, r.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("store auto-reload rule: %w", err)
	}
	return nil
}

type reloadRow struct {
	AccountID       string `db:"account_id"`
	ClientID        string `db:"client_id"`
	Enabled         int    `db:"enabled"`
	Threshold       int64  `db:"threshold"`
	OfferID         string `db:"offer_id"`
	PaymentMethodID string `db:"payment_method_id"`
	Failures        int    `db:"failures"`
	DisabledReason  string `db:"disabled_reason"`
	RetryAfter      int64  `db:"retry_after"`
	UpdatedAt       int64  `db:"updated_at"`
}

const reloadColumns = `account_id, client_id, enabled, threshold, offer_id, payment_method_id, failures, disabled_reason, retry_after, updated_at`

func (r reloadRow) rule() *payments.AutoReload {
	return &payments.AutoReload{AccountID: r.AccountID, ClientID: r.ClientID, Enabled: r.Enabled == 1, Threshold: r.Threshold, OfferID: r.OfferID,
		PaymentMethodID: r.PaymentMethodID, Failures: r.Failures, DisabledReason: r.DisabledReason, UpdatedAt: fromMillis(r.UpdatedAt)}
}

func (s *Store) AutoReload(ctx context.Context, accountID string) (*payments.AutoReload, error) {
	var r reloadRow
	if err := getOne(ctx, s.db, &r, "auto-reload rule", `SELECT `+reloadColumns+` FROM auto_reload_rules WHERE account_id = ?`, accountID); err != nil {
		return nil, err
	}
	return r.rule(), nil
}

// queueReload queues a reload purchase, in the transaction of a debit that
// left available credits of a resource type, when the account's rule says so.
// The unique index on open reloads keeps it to one however many debits race.
func (s *Store) queueReload(ctx context.Context, tx *sqlx.Tx, accountID, resourceType string, available int64) error {
	var r reloadRow
	err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+reloadColumns+` FROM auto_reload_rules WHERE account_id = ?`), accountID)
	if sqldb.IsNoRows(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read auto-reload rule: %w", err)
	}
	now := s.millis()
	if r.Enabled != 1 || available >= r.Threshold || now < r.RetryAfter {
		return nil
	}
	var o offerRow
	if err := tx.GetContext(ctx, &o, tx.Rebind(`SELECT `+offerColumns+` FROM offers WHERE id = ?`), r.OfferID); err != nil {
		return fmt.Errorf("read reload offer: %w", err)
	}
	if o.ResourceType != resourceType {
		return nil
	}
	t := fromMillis(now)
	_, err = insertPurchase(ctx, tx, &payments.Purchase{ID: ids.New(ids.Purchase), Kind: payments.PurchaseReload, ClientID: r.ClientID,
		AccountID: accountID, OfferID: o.ID, ResourceType: o.ResourceType, Quantity: o.Quantity, Amount: o.Price, Currency: o.Currency,
		MerchantID: o.MerchantID, PaymentMethodID: r.PaymentMethodID, State: payments.PurchaseQueued, CreatedAt: t, UpdatedAt: t}, true)
	return err
}

// claimPurchases claims the worker's due purchases, lock after its
// subquery's LIMIT. A queued reload starts a new attempt with a new key;
// anything else claimed here repeats its attempt under the same key. An
// attempt's lease is found through purchases_work (state, kind, lease_until):
// naming every kind lets its lease range be searched, where the state alone
// walked every processing and pending purchase, those left pending past the
// reconcile window too, every second.
func claimPurchases(lock string) string {
	return `UPDATE purchases SET
			attempts = CASE WHEN state = ? THEN attempts + 1 ELSE attempts END,
			attempt_key = CASE WHEN state = ? THEN id || ':' || CAST(attempts + 1 AS TEXT) ELSE attempt_key END,
			attempt_started_at = CASE WHEN state = ? THEN ? ELSE attempt_started_at END,
			state = ?, lease_until = ?, updated_at = ?
		WHERE id IN (SELECT id FROM purchases
			WHERE (kind = ? AND state = ?)
				OR (state IN (?, ?) AND kind IN (?, ?) AND lease_until <= ? AND COALESCE(attempt_started_at, 0) >= ?)
			ORDER BY updated_at, id LIMIT ?` + lock + `)
		RETURNING ` + purchaseColumns
}

func (s *Store) ClaimPurchases(ctx context.Context, now, leaseUntil time.Time, limit int) ([]payments.Purchase, error) {
	lock := ""
	if s.db.Dialect == sqldb.Postgres {
		// Replicas skip rows another is claiming instead of waiting for them.
		lock = ` FOR UPDATE SKIP LOCKED`
	}
	var rows []purchaseRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(claimPurchases(lock)),
		payments.PurchaseQueued, payments.PurchaseQueued, payments.PurchaseQueued, now.UnixMilli(), payments.PurchaseProcessing, leaseUntil.UnixMilli(), now.UnixMilli(),
		payments.PurchaseReload, payments.PurchaseQueued, payments.PurchaseProcessing, payments.PurchasePending, payments.PurchaseCheckout, payments.PurchaseReload,
		now.UnixMilli(), now.Add(-payments.ReconcileWindow).UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim purchases: %w", err)
	}
	out := make([]payments.Purchase, len(rows))
	for i, r := range rows {
		out[i] = *r.purchase()
	}
	return out, nil
}

// finish moves an attempt's purchase from processing or pending to state,
// in tx; false when that attempt was finished already.
func finish(ctx context.Context, tx *sqlx.Tx, id, attemptKey, set string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE purchases SET `+set+`, lease_until = NULL WHERE id = ? AND attempt_key = ? AND state IN (?, ?)`),
		append(args, id, attemptKey, payments.PurchaseProcessing, payments.PurchasePending)...)
	if err != nil {
		return false, fmt.Errorf("finish purchase: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *Store) CompletePurchase(ctx context.Context, id, attemptKey, chargeID string) (bool, error) {
	done := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		now := s.millis()
		ok, err := finish(ctx, tx, id, attemptKey, `state = ?, charge_id = ?, failure_code = NULL, failure_message = NULL, updated_at = ?`,
			payments.PurchaseSucceeded, chargeID, now)
		if err != nil || !ok {
			return err
		}
		var p purchaseRow
		if err := tx.GetContext(ctx, &p, tx.Rebind(`SELECT `+purchaseColumns+` FROM purchases WHERE id = ?`), id); err != nil {
			return fmt.Errorf("read purchase: %w", err)
		}
		kind := payments.TxPurchase
		if p.Kind == payments.PurchaseReload {
			kind = payments.TxReload
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE auto_reload_rules SET failures = 0, retry_after = 0 WHERE account_id = ?`), p.AccountID); err != nil {
				return err
			}
		}
		if err := s.post(ctx, tx, move(kind, p.AccountID, p.ID, "", p.ResourceType,
			platform(payments.BookSold, -p.Quantity), own(p.AccountID, payments.BookAvailable, p.Quantity))); err != nil {
			return err
		}
		if p.SessionID != nil {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE payment_sessions SET state = ?, closed_at = ? WHERE id = ? AND state <> ?`),
				payments.SessionCompleted, now, *p.SessionID, payments.SessionCompleted); err != nil {
				return err
			}
		}
		done = true
		typ := payments.EventPurchaseSucceeded
		if p.Kind == payments.PurchaseReload {
			typ = payments.EventReloadSucceeded
		}
		return s.emitPurchase(ctx, tx, id, typ)
	})
	return done, err
}

func (s *Store) FailPurchase(ctx context.Context, id, attemptKey, code, message string, retryAfter time.Time) (bool, error) {
	done := false
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var kind, accountID string
		err := tx.QueryRowxContext(ctx, tx.Rebind(`SELECT kind, account_id FROM purchases WHERE id = ?`), id).Scan(&kind, &accountID)
		if sqldb.IsNoRows(err) {
			return payments.ErrNotFound
		}
		if err != nil {
			return err
		}
		// A declined checkout waits for another card; a declined reload is over.
		state := payments.PurchaseOpen
		if kind == payments.PurchaseReload {
			state = payments.PurchaseFailed
		}
		ok, err := finish(ctx, tx, id, attemptKey, `state = ?, failure_code = ?, failure_message = ?, updated_at = ?`, state, code, message, s.millis())
		if err != nil || !ok {
			return err
		}
		done = true
		if kind != payments.PurchaseReload {
			return nil
		}
		if err := s.emitPurchase(ctx, tx, id, payments.EventReloadFailed); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE auto_reload_rules SET failures = failures + 1, retry_after = ?,
			enabled = CASE WHEN failures + 1 >= ? THEN 0 ELSE enabled END,
			disabled_reason = CASE WHEN failures + 1 >= ? THEN ? ELSE disabled_reason END
			WHERE account_id = ?`), retryAfter.UnixMilli(), payments.MaxReloadFailures, payments.MaxReloadFailures,
			fmt.Sprintf("%d reloads failed in a row (last: %s): configure the rule again", payments.MaxReloadFailures, code), accountID)
		return err
	})
	return done, err
}

func (s *Store) MarkPending(ctx context.Context, id, attemptKey string, retryAt time.Time) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE purchases SET state = ?, lease_until = ?, updated_at = ? WHERE id = ? AND attempt_key = ? AND state = ?`),
		payments.PurchasePending, retryAt.UnixMilli(), s.millis(), id, attemptKey, payments.PurchaseProcessing)
	if err != nil {
		return fmt.Errorf("mark purchase pending: %w", err)
	}
	return nil
}

// ClaimCheckout starts an attempt at an open checkout with a payment method:
// the purchase is processing under a new gateway key until leaseUntil. A
// purchase being paid, or paid, is ErrConflict: of two confirms, one claims.
func (s *Store) ClaimCheckout(ctx context.Context, purchaseID, paymentMethodID string, leaseUntil time.Time) (*payments.Purchase, error) {
	var r purchaseRow
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`UPDATE purchases SET state = ?, payment_method_id = ?, attempts = attempts + 1,
			attempt_key = id || ':' || CAST(attempts + 1 AS TEXT), attempt_started_at = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND kind = ? AND state = ? RETURNING `+purchaseColumns),
		payments.PurchaseProcessing, paymentMethodID, s.millis(), leaseUntil.UnixMilli(), s.millis(), purchaseID, payments.PurchaseCheckout, payments.PurchaseOpen)
	if sqldb.IsNoRows(err) {
		if _, err := s.Purchase(ctx, purchaseID); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the purchase is being paid or is closed", payments.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("claim checkout: %w", err)
	}
	return r.purchase(), nil
}

// RefundPurchase takes a succeeded purchase's units back from its account,
// in one transaction with the purchase's new state. Units already spent
// cannot be taken back: ErrInsufficientCredits, and nothing changes.
func (s *Store) RefundPurchase(ctx context.Context, id, note string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var p purchaseRow
		err := tx.GetContext(ctx, &p, tx.Rebind(`UPDATE purchases SET state = ?, updated_at = ? WHERE id = ? AND state = ? RETURNING `+purchaseColumns),
			payments.PurchaseRefunded, s.millis(), id, payments.PurchaseSucceeded)
		if sqldb.IsNoRows(err) {
			return fmt.Errorf("%w: only a succeeded purchase is refunded", payments.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("refund purchase: %w", err)
		}
		if err := s.post(ctx, tx, move(payments.TxRefund, p.AccountID, p.ID, note, p.ResourceType,
			own(p.AccountID, payments.BookAvailable, -p.Quantity), platform(payments.BookSold, p.Quantity))); err != nil {
			return err
		}
		return s.emitPurchase(ctx, tx, p.ID, payments.EventPurchaseRefunded)
	})
}

// QueueReload queues a reload for the account if its rule asks for one at
// its balance now (the check a debit makes in its own transaction).
func (s *Store) QueueReload(ctx context.Context, accountID, resourceType string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		a, err := readAccount(ctx, tx, `id = ?`, accountID)
		if err != nil {
			return err
		}
		return s.queueReload(ctx, tx, accountID, resourceType, a.Balances[resourceType].Available)
	})
}

func (s *Store) RedeemSession(ctx context.Context, tokenHash, sessionID string, now time.Time) (*payments.Session, error) {
	var r sessionRow
	// One statement: of two redeems of one token, one finds it open.
	err := s.db.GetContext(ctx, &r, s.db.Rebind(`UPDATE payment_sessions SET state = ?, redeemed_at = ?
		WHERE token_hash = ? AND state = ? AND expires_at > ? AND (? = '' OR id = ?) RETURNING `+sessionColumns),
		payments.SessionActive, now.UnixMilli(), tokenHash, payments.SessionOpen, now.UnixMilli(), sessionID, sessionID)
	if sqldb.IsNoRows(err) {
		return nil, payments.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redeem session: %w", err)
	}
	return r.session(), nil
}

func (s *Store) CancelSession(ctx context.Context, id string, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE payment_sessions SET state = ?, closed_at = ? WHERE id = ? AND state = ?`),
			payments.SessionCancelled, now.UnixMilli(), id, payments.SessionActive)
		if err != nil {
			return fmt.Errorf("cancel session: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%w: the session is not active", payments.ErrConflict)
		}
		if _, err = tx.ExecContext(ctx, tx.Rebind(cancelSessionPurchase), payments.PurchaseCancelled, now.UnixMilli(), id, payments.PurchaseOpen); err != nil {
			return err
		}
		return s.emitSession(ctx, tx, id, payments.EventSessionCancelled)
	})
}

func (s *Store) PaymentMethods(ctx context.Context, accountID string) ([]payments.PaymentMethod, error) {
	var rows []paymentMethodRow
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+paymentMethodColumns+` FROM payment_methods
		WHERE account_id = ? AND deleted_at IS NULL ORDER BY is_default DESC, created_at, id`), accountID); err != nil {
		return nil, fmt.Errorf("list payment methods: %w", err)
	}
	out := make([]payments.PaymentMethod, len(rows))
	for i, r := range rows {
		out[i] = *r.paymentMethod()
	}
	return out, nil
}

func (s *Store) SetDefaultMethod(ctx context.Context, accountID, id string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE payment_methods SET is_default = CASE WHEN id = ? THEN 1 ELSE 0 END
			WHERE account_id = ? AND deleted_at IS NULL AND EXISTS (SELECT 1 FROM payment_methods m WHERE m.id = ? AND m.account_id = ? AND m.deleted_at IS NULL)`),
			id, accountID, id, accountID)
		if err != nil {
			return fmt.Errorf("set default payment method: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return payments.ErrNotFound
		}
		return nil
	})
}

func (s *Store) DeleteMethod(ctx context.Context, accountID, id string, now time.Time) error {
	// The row stays (purchases name it); its vault reference does not.
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE payment_methods SET deleted_at = ?, is_default = 0, vault_ciphertext = '', vault_key = '', vault_kek = ''
		WHERE id = ? AND account_id = ? AND deleted_at IS NULL`), now.UnixMilli(), id, accountID)
	if err != nil {
		return fmt.Errorf("delete payment method: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
}
