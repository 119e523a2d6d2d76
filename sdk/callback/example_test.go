package callback_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vitolahq/vitola/sdk/callback"
)

// A receiver on net/http and database/sql. The event's ID is recorded in the
// same transaction as the fulfillment, and the answer is 2xx only after the
// commit: a callback that arrives twice (a retry after a lost answer, a
// replay) finds its ID recorded and is acknowledged without being applied
// again, and one that fails before the commit is answered 503 and retried.
//
// The table, in PostgreSQL (SQLite: the same, with ? placeholders):
//
//	CREATE TABLE vitola_events (
//	  id          text PRIMARY KEY,
//	  type        text NOT NULL,
//	  received_at timestamptz NOT NULL
//	);
func ExampleHandler() {
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL")) // any database/sql driver
	if err != nil {
		log.Fatal(err)
	}
	verifier := callback.Verifier{
		// During a rotation, hold the old and the new secret:
		// VITOLA_SIGNING_SECRETS=whsec_new…,whsec_old…
		Secrets: strings.Split(os.Getenv("VITOLA_SIGNING_SECRETS"), ","),
	}
	http.Handle("POST /hooks/vitola", callback.Handler(verifier, func(w http.ResponseWriter, r *http.Request, e *callback.Event) {
		if err := fulfill(r.Context(), db, e); err != nil {
			log.Printf("callback %s: %v", e.ID, err)
			// Not 410: that would turn this endpoint's callbacks off.
			http.Error(w, "not recorded; try again", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent) // after the commit
	}))
	log.Fatal(http.ListenAndServe(":8080", nil))
}

// fulfill applies an event once: its ID and its effect commit together.
func fulfill(ctx context.Context, db *sql.DB, e *callback.Event) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // no effect after Commit

	res, err := tx.ExecContext(ctx,
		`INSERT INTO vitola_events (id, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.Type, time.Now())
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return nil // seen before: already applied, acknowledge again
	}

	switch e.Type {
	case callback.PurchaseSucceeded, callback.ReloadSucceeded:
		var data struct {
			Purchase struct {
				ID       string `json:"id"`
				Quantity int64  `json:"quantity"`
			} `json:"purchase"`
			BillingAccount struct {
				AccountReference string `json:"accountReference"`
			} `json:"billingAccount"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE orders SET paid = true, vitola_purchase_id = $1 WHERE customer = $2 AND paid = false`,
			data.Purchase.ID, data.BillingAccount.AccountReference); err != nil {
			return err
		}
	default:
		// Other and future types: recorded, nothing to apply.
	}
	return tx.Commit()
}

// Sign makes the headers of a callback for a test of a receiver.
func ExampleSign() {
	secret := "whsec_test_secret"
	body := []byte(`{"id":"fev_1","type":"purchase.succeeded","createdAt":"2026-01-01T00:00:00.000Z","data":{}}`)
	now := time.Unix(1767225600, 0)

	req := httptest.NewRequest(http.MethodPost, "/hooks/vitola", bytes.NewReader(body))
	req.Header.Set(callback.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(callback.HeaderSignature, callback.Sign(secret, body, now))

	e, err := callback.Verify(secret, req.Header, body, now)
	fmt.Println(e.ID, e.Type, err)
	// Output: fev_1 purchase.succeeded <nil>
}

// A refused callback says why.
func ExampleVerify_error() {
	header := http.Header{}
	header.Set(callback.HeaderTimestamp, "1767225000")
	header.Set(callback.HeaderSignature, "v1=0123")

	_, err := callback.Verify("whsec_test_secret", header, []byte(`{}`), time.Unix(1767225600, 0))
	var ce *callback.Error
	if errors.As(err, &ce) {
		fmt.Println(ce.Code, ce.Status())
	}
	fmt.Println(err)
	// Output:
	// timestamp_out_of_tolerance 401
	// callback: the callback was signed 600 s ago, more than the 300 s allowed: a replayed callback, or this server's clock runs ahead (check NTP)
}
