package sqlstore

import (
	"context"
	"encoding/json"
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
// reports. A client without a callback URL gets none.
func (s *Store) emit(ctx context.Context, tx *sqlx.Tx, clientID, typ, subjectID string, data any) error {
	if clientID == "" {
		return nil
	}
	var url string
	err := tx.GetContext(ctx, &url, tx.Rebind(`SELECT callback_url FROM service_clients WHERE id = ?`), clientID)
	if sqldb.IsNoRows(err) || (err == nil && url == "") {
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
	_, err = tx.ExecContext(ctx, tx.Rebind(`INSERT INTO callback_events (id, client_id, type, subject_id, body, state, next_attempt_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), id, clientID, typ, subjectID, string(payments.EventBody(id, typ, now, raw)), payments.EventPending, now.UnixMilli(), now.UnixMilli())
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
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`UPDATE callback_events SET lease_until = ?
		WHERE id IN (SELECT e.id FROM callback_events e JOIN service_clients c ON c.id = e.client_id
			WHERE e.state = ? AND e.next_attempt_at <= ? AND (e.lease_until IS NULL OR e.lease_until <= ?) AND c.callbacks_disabled_at IS NULL
			ORDER BY e.next_attempt_at, e.id LIMIT ?`+lock+`)
		RETURNING `+eventColumns), leaseUntil.UnixMilli(), payments.EventPending, now.UnixMilli(), now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim callback events: %w", err)
	}
	return events(rows), nil
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
		var clientID string
		if err := tx.GetContext(ctx, &clientID, tx.Rebind(`SELECT client_id FROM callback_events WHERE id = ?`), a.EventID); err != nil {
			return fmt.Errorf("read callback event: %w", err)
		}
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
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE callback_events SET state = ?, attempts = attempts + 1, next_attempt_at = ?, lease_until = NULL,
			last_error = ?, delivered_at = COALESCE(?, delivered_at) WHERE id = ?`), o.State, next, nullable(a.Error), delivered, a.EventID); err != nil {
			return fmt.Errorf("update callback event: %w", err)
		}
		if o.DisableClient {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE service_clients SET callbacks_disabled_at = COALESCE(callbacks_disabled_at, ?) WHERE id = ?`),
				a.StartedAt.UnixMilli(), clientID); err != nil {
				return err
			}
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
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+eventColumns+` FROM callback_events
		WHERE (? = '' OR client_id = ?) AND (? = '' OR state = ?) ORDER BY created_at DESC, id DESC LIMIT ?`),
		clientID, clientID, state, state, limit); err != nil {
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

// reschedule makes an event due now in one of the states from.
func (s *Store) reschedule(ctx context.Context, id string, now time.Time, from ...string) error {
	args := []any{payments.EventPending, now.UnixMilli(), id}
	for _, f := range from {
		args = append(args, f)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(from)), ", ")
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE callback_events SET state = ?, next_attempt_at = ?, lease_until = NULL WHERE id = ? AND state IN (`+marks+`)`), args...)
	if err != nil {
		return fmt.Errorf("reschedule callback event: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
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
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE service_clients SET callbacks_disabled_at = ? WHERE id = ?`), disabled, clientID)
	if err != nil {
		return fmt.Errorf("turn callbacks on or off: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payments.ErrNotFound
	}
	return nil
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
