package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/timestamp"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// EventPrefix begins fulfillment event IDs.
const EventPrefix = "fev"

// emit writes an event to the outbox in tx, the transaction of the change it
// reports. A client without a callback URL gets none; a client whose
// callbacks are off gets it parked.
func (s *Store) emit(ctx context.Context, tx *sqlx.Tx, clientID, typ, subjectID string, data any) error {
	if clientID == "" {
		return nil
	}
	var c struct {
		URL      string `db:"callback_url"`
		Disabled *int64 `db:"callbacks_disabled_at"`
	}
	err := tx.GetContext(ctx, &c, tx.Rebind(`SELECT callback_url, callbacks_disabled_at FROM service_clients WHERE id = ?`+s.clientLock("", false)), clientID)
	if sqldb.IsNoRows(err) || (err == nil && c.URL == "") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read callback URL: %w", err)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	now := s.now()
	id := ids.New(EventPrefix)
	_, err = tx.ExecContext(ctx, tx.Rebind(`INSERT INTO callback_events (id, client_id, type, subject_id, body, state, next_attempt_at, created_at, parked)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), id, clientID, typ, subjectID, string(payments.EventBody(id, typ, now, raw)), payments.EventPending, now.UnixMilli(), now.UnixMilli(),
		parked(c.Disabled != nil))
	if err != nil {
		return fmt.Errorf("write callback event: %w", err)
	}
	return nil
}

// purchaseEvent is a purchase event's data: the purchase as the API shows it,
// and its account.
type purchaseEvent struct {
	Purchase       eventPurchase `json:"purchase"`
	BillingAccount eventAccount  `json:"billingAccount"`
	SessionID      *string       `json:"paymentSessionId"`
}

type eventPurchase struct {
	ID             string     `json:"id"`
	Kind           string     `json:"kind"`
	State          string     `json:"state"`
	ResourceType   string     `json:"resourceType"`
	Quantity       int64      `json:"quantity"`
	Price          eventMoney `json:"price"`
	OfferID        string     `json:"offerId"`
	FailureCode    *string    `json:"failureCode"`
	FailureMessage *string    `json:"failureMessage"`
	UpdatedAt      string     `json:"updatedAt"`
}

type eventMoney struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type eventAccount struct {
	ID               string `json:"id"`
	AccountReference string `json:"accountReference"`
}

// purchaseEventData reads a purchase and its account in tx.
func purchaseEventData(ctx context.Context, tx *sqlx.Tx, id string) (*purchaseRow, purchaseEvent, error) {
	var p purchaseRow
	if err := tx.GetContext(ctx, &p, tx.Rebind(`SELECT `+purchaseColumns+` FROM purchases WHERE id = ?`), id); err != nil {
		return nil, purchaseEvent{}, fmt.Errorf("read purchase: %w", err)
	}
	a, err := readAccount(ctx, tx, `id = ?`, p.AccountID)
	if err != nil {
		return nil, purchaseEvent{}, err
	}
	ref := a.Reference
	if a.KeyID != "" {
		ref = a.KeyID
	}
	return &p, purchaseEvent{
		Purchase: eventPurchase{ID: p.ID, Kind: p.Kind, State: p.State, ResourceType: p.ResourceType, Quantity: p.Quantity,
			Price: eventMoney{p.Amount, p.Currency}, OfferID: p.OfferID, FailureCode: p.FailureCode, FailureMessage: p.FailureMessage,
			UpdatedAt: timestamp.Format(fromMillis(p.UpdatedAt))},
		BillingAccount: eventAccount{ID: a.ID, AccountReference: ref},
		SessionID:      p.SessionID,
	}, nil
}

// emitPurchase writes a purchase's event, in tx.
func (s *Store) emitPurchase(ctx context.Context, tx *sqlx.Tx, purchaseID, typ string) error {
	p, data, err := purchaseEventData(ctx, tx, purchaseID)
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, p.ClientID, typ, p.ID, data)
}

// emitSession writes a session's event (expired, cancelled), in tx.
func (s *Store) emitSession(ctx context.Context, tx *sqlx.Tx, sessionID, typ string) error {
	var sess sessionRow
	if err := tx.GetContext(ctx, &sess, tx.Rebind(`SELECT `+sessionColumns+` FROM payment_sessions WHERE id = ?`), sessionID); err != nil {
		return fmt.Errorf("read session: %w", err)
	}
	_, data, err := purchaseEventData(ctx, tx, sess.PurchaseID)
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, sess.ClientID, typ, sess.ID, struct {
		Session struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"paymentSession"`
		purchaseEvent
	}{Session: struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}{sess.ID, sess.State}, purchaseEvent: data})
}

type eventRow struct {
	ID            string  `db:"id"`
	ClientID      string  `db:"client_id"`
	Type          string  `db:"type"`
	SubjectID     string  `db:"subject_id"`
	Body          string  `db:"body"`
	State         string  `db:"state"`
	Attempts      int     `db:"attempts"`
	NextAttemptAt int64   `db:"next_attempt_at"`
	LastError     *string `db:"last_error"`
	CreatedAt     int64   `db:"created_at"`
	DeliveredAt   *int64  `db:"delivered_at"`
}

const eventColumns = `id, client_id, type, subject_id, body, state, attempts, next_attempt_at, last_error, created_at, delivered_at`

func (r eventRow) event() payments.CallbackEvent {
	return payments.CallbackEvent{ID: r.ID, ClientID: r.ClientID, Type: r.Type, SubjectID: r.SubjectID, Body: []byte(r.Body), State: r.State,
		Attempts: r.Attempts, NextAttemptAt: fromMillis(r.NextAttemptAt), LastError: str(r.LastError), CreatedAt: fromMillis(r.CreatedAt),
		DeliveredAt: optMillis(r.DeliveredAt)}
}

func events(rows []eventRow) []payments.CallbackEvent {
	out := make([]payments.CallbackEvent, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out
}

// senderLease names the lease that lets one process of a SQLite store send;
// senderLeaseTerm is how long it lasts unless renewed.
const (
	senderLease     = "callback-sender"
	senderLeaseTerm = 5 * time.Second
)

func (s *Store) ClaimEvents(ctx context.Context, holder string, now, leaseUntil time.Time, limit int) ([]payments.CallbackEvent, error) {
	lock := ""
	if s.db.Dialect == sqldb.Postgres {
		// Replicas skip the events another is sending.
		lock = ` FOR UPDATE SKIP LOCKED`
	} else {
		// Processes sharing a SQLite file: one holds the sender's lease, a
		// short one it renews each round, so that a process that died hands
		// sending on within seconds (each event's own lease keeps an event
		// from being sent twice).
		ok, err := s.holdLease(ctx, senderLease, holder, now, now.Add(senderLeaseTerm))
		if err != nil || !ok {
			return nil, err
		}
	}
	var rows []eventRow
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(claimEvents(lock)), leaseUntil.UnixMilli(), payments.EventPending, now.UnixMilli(), now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim callback events: %w", err)
	}
	return events(rows), nil
}

// listEvents is the statement that lists events newest first, of one client
// and in one state when given, and its arguments but the limit. Each filter is
// in the statement only when given: a client's events are then searched
// through its index, not sorted out of the whole outbox.
func listEvents(clientID, state string) (string, []any) {
	var where []string
	var args []any
	if clientID != "" {
		where, args = append(where, "client_id = ?"), append(args, clientID)
	}
	if state != "" {
		where, args = append(where, "state = ?"), append(args, state)
	}
	q := `SELECT ` + eventColumns + ` FROM callback_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + ` ORDER BY created_at DESC, id DESC LIMIT ?`, args
}

// claimEvents leases the earliest due events. It searches unparked events
// only; the join still drops an event of a client whose callbacks went off
// while the event was being written or tried (parked at the next change).
func claimEvents(lock string) string {
	return `UPDATE callback_events SET lease_until = ?
		WHERE id IN (SELECT e.id FROM callback_events e JOIN service_clients c ON c.id = e.client_id
			WHERE e.state = ? AND e.parked = 0 AND e.next_attempt_at <= ? AND (e.lease_until IS NULL OR e.lease_until <= ?) AND c.callbacks_disabled_at IS NULL
			ORDER BY e.next_attempt_at, e.id LIMIT ?` + lock + `)
		RETURNING ` + eventColumns
}

// parked is the parked column's value for a client whose callbacks are off
// or on.
func parked(off bool) int {
	if off {
		return 1
	}
	return 0
}

// clientLock is the clause that locks the service client row read (of table
// alias "" or of) against a concurrent change until the transaction ends, on
// PostgreSQL: an event parked or unparked from what the read saw is written
// before callbacks can be turned on or off, whose own statement then finds
// it. A transaction that goes on to change the row itself locks it for
// update from the start: two holding it shared could each wait for the
// other. SQLite's transactions take the write lock up front and need none.
func (s *Store) clientLock(of string, update bool) string {
	if s.db.Dialect != sqldb.Postgres {
		return ""
	}
	clause := " FOR SHARE"
	if update {
		clause = " FOR UPDATE"
	}
	if of != "" {
		clause += " OF " + of
	}
	return clause
}

// parkEvents parks or unparks a client's pending events. The literal state
// lets both stores search the partial index of pending events.
const parkEvents = `UPDATE callback_events SET parked = ? WHERE client_id = ? AND state = 'pending' AND parked <> ?`

// parkClient parks or unparks the client's pending events, in the
// transaction that turns its callbacks off or on (after the client's row is
// written, which locks it).
func parkClient(ctx context.Context, tx *sqlx.Tx, clientID string, off bool) error {
	if _, err := tx.ExecContext(ctx, tx.Rebind(parkEvents), parked(off), clientID, parked(off)); err != nil {
		return fmt.Errorf("park callback events: %w", err)
	}
	return nil
}

// holdLease takes or renews a named lease for holder until until; it
// reports whether holder has it.
func (s *Store) holdLease(ctx context.Context, name, holder string, now, until time.Time) (bool, error) {
	if _, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO worker_leases (name, holder, until) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		name, holder, until.UnixMilli()); err != nil {
		return false, fmt.Errorf("lease %s: %w", name, err)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE worker_leases SET holder = ?, until = ? WHERE name = ? AND (holder = ? OR until <= ?)`),
		holder, until.UnixMilli(), name, holder, now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", name, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (s *Store) FinishAttempt(ctx context.Context, a payments.CallbackAttempt, o payments.AttemptOutcome) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var ev struct {
			ClientID string `db:"client_id"`
			Disabled *int64 `db:"callbacks_disabled_at"`
		}
		if err := tx.GetContext(ctx, &ev, tx.Rebind(`SELECT e.client_id, c.callbacks_disabled_at FROM callback_events e JOIN service_clients c ON c.id = e.client_id
			WHERE e.id = ?`+s.clientLock("c", o.DisableClient)), a.EventID); err != nil {
			return fmt.Errorf("read callback event: %w", err)
		}
		clientID := ev.ClientID
		var status *int
		if a.Status != 0 {
			status = &a.Status
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO callback_attempts (id, event_id, attempt, started_at, duration_ms, status, error) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			ids.New("cba"), a.EventID, a.Attempt, a.StartedAt.UnixMilli(), a.Duration.Milliseconds(), status, nullable(a.Error)); err != nil {
			return fmt.Errorf("record callback attempt: %w", err)
		}
		next, delivered := a.StartedAt.UnixMilli(), (*int64)(nil)
		if o.State == payments.EventPending && !o.RetryAt.IsZero() {
			next = o.RetryAt.UnixMilli()
		}
		if o.State == payments.EventDelivered {
			d := a.StartedAt.UnixMilli()
			delivered = &d
		}
		// An event tried again later parks if its client's callbacks went
		// off while it was being sent.
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE callback_events SET state = ?, attempts = attempts + 1, next_attempt_at = ?, lease_until = NULL,
			last_error = ?, delivered_at = COALESCE(?, delivered_at), parked = ? WHERE id = ?`), o.State, next, nullable(a.Error), delivered, parked(ev.Disabled != nil), a.EventID); err != nil {
			return fmt.Errorf("update callback event: %w", err)
		}
		if o.DisableClient {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE service_clients SET callbacks_disabled_at = COALESCE(callbacks_disabled_at, ?) WHERE id = ?`),
				a.StartedAt.UnixMilli(), clientID); err != nil {
				return err
			}
			return parkClient(ctx, tx, clientID, true)
		}
		return nil
	})
}

func (s *Store) Event(ctx context.Context, id string) (*payments.CallbackEvent, error) {
	var r eventRow
	if err := getOne(ctx, s.db, &r, "callback event", `SELECT `+eventColumns+` FROM callback_events WHERE id = ?`, id); err != nil {
		return nil, err
	}
	e := r.event()
	return &e, nil
}

func (s *Store) Events(ctx context.Context, clientID, state string, limit int) ([]payments.CallbackEvent, error) {
	var rows []eventRow
	query, args := listEvents(clientID, state)
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(query), append(args, limit)...); err != nil {
		return nil, fmt.Errorf("list callback events: %w", err)
	}
	return events(rows), nil
}

func (s *Store) Attempts(ctx context.Context, eventID string) ([]payments.CallbackAttempt, error) {
	var rows []struct {
		EventID    string  `db:"event_id"`
		Attempt    int     `db:"attempt"`
		StartedAt  int64   `db:"started_at"`
		DurationMS int64   `db:"duration_ms"`
		Status     *int    `db:"status"`
		Error      *string `db:"error"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT event_id, attempt, started_at, duration_ms, status, error FROM callback_attempts
		WHERE event_id = ? ORDER BY attempt, started_at`), eventID); err != nil {
		return nil, fmt.Errorf("list callback attempts: %w", err)
	}
	out := make([]payments.CallbackAttempt, len(rows))
	for i, r := range rows {
		out[i] = payments.CallbackAttempt{EventID: r.EventID, Attempt: r.Attempt, StartedAt: fromMillis(r.StartedAt),
			Duration: time.Duration(r.DurationMS) * time.Millisecond, Error: str(r.Error)}
		if r.Status != nil {
			out[i].Status = *r.Status
		}
	}
	return out, nil
}

// reschedule makes an event due now in one of the states from (parked if
// its client's callbacks are off).
func (s *Store) reschedule(ctx context.Context, id string, now time.Time, from ...string) error {
	var n int64
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var disabled *int64
		err := tx.GetContext(ctx, &disabled, tx.Rebind(`SELECT c.callbacks_disabled_at FROM callback_events e JOIN service_clients c ON c.id = e.client_id
			WHERE e.id = ?`+s.clientLock("c", false)), id)
		if sqldb.IsNoRows(err) {
			return nil // not found: told below
		}
		if err != nil {
			return err
		}
		args := []any{payments.EventPending, now.UnixMilli(), parked(disabled != nil), id}
		for _, f := range from {
			args = append(args, f)
		}
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(from)), ", ")
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE callback_events SET state = ?, next_attempt_at = ?, lease_until = NULL, parked = ? WHERE id = ? AND state IN (`+marks+`)`), args...)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return fmt.Errorf("reschedule callback event: %w", err)
	}
	if n != 1 {
		if _, err := s.Event(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("%w: the event was delivered already (replay it to send it again)", payments.ErrConflict)
	}
	return nil
}

func (s *Store) RetryEvent(ctx context.Context, id string, now time.Time) error {
	return s.reschedule(ctx, id, now, payments.EventPending, payments.EventFailed)
}

func (s *Store) ReplayEvent(ctx context.Context, id string, now time.Time) error {
	return s.reschedule(ctx, id, now, payments.EventPending, payments.EventFailed, payments.EventDelivered)
}

func (s *Store) SetCallbacksOn(ctx context.Context, clientID string, on bool, at time.Time) error {
	var disabled *int64
	if !on {
		ms := at.UnixMilli()
		disabled = &ms
	}
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE service_clients SET callbacks_disabled_at = ? WHERE id = ?`), disabled, clientID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payments.ErrNotFound
		}
		return parkClient(ctx, tx, clientID, !on)
	})
	if err != nil && !errors.Is(err, payments.ErrNotFound) {
		return fmt.Errorf("turn callbacks on or off: %w", err)
	}
	return err
}

func (s *Store) SetSigningSecret(ctx context.Context, clientID string, sealed envelope.Sealed, previousUntil time.Time) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE service_clients SET
		previous_signing_ciphertext = signing_ciphertext, previous_signing_key = signing_key, previous_signing_kek = signing_kek,
		previous_signing_expires_at = ?, signing_ciphertext = ?, signing_key = ?, signing_kek = ? WHERE id = ? AND revoked_at IS NULL`),
		previousUntil.UnixMilli(), sealed.Ciphertext, sealed.WrappedKey, sealed.KEKID, clientID)
	if err != nil {
		return fmt.Errorf("store signing secret: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
}
