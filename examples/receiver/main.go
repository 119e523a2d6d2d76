// Command receiver is a fulfillment-callback receiver built on
// github.com/vitolahq/vitola/sdk/callback, as an integrator's backend would
// run one: it verifies each callback's signature, records the event and its
// fulfillment in one SQLite transaction (deduplicating on the event ID), and
// acknowledges only after the commit.
//
//	go run ./examples/receiver -addr 127.0.0.1:8099 -secret whsec_… [-db receiver.db]
//
// It also answers GET /paid and GET /cancelled, so a hosted checkout's
// return and cancel URLs have somewhere to land.
package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/vitolahq/vitola/sdk/callback"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8099", "where to listen")
	secrets := fs.String("secret", "", "the client's signing secret(s), comma-separated during a rotation (required)")
	dbPath := fs.String("db", "receiver.db", "the SQLite file that records events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secrets == "" {
		return errors.New("-secret is required: the whsec_… that `vitola payments clients create` printed")
	}
	h, err := New(*dbPath, strings.Split(*secrets, ","), out)
	if err != nil {
		return err
	}
	log.Printf("receiving callbacks on http://%s/hooks", *addr)
	return http.ListenAndServe(*addr, h)
}

// New returns the receiver's handler over its SQLite file.
func New(dbPath string, secrets []string, out io.Writer) (http.Handler, error) {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, type TEXT NOT NULL, body TEXT NOT NULL)`); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks", callback.Handler(callback.Verifier{Secrets: secrets}, func(w http.ResponseWriter, r *http.Request, e *callback.Event) {
		tx, err := db.Begin()
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback()
		res, err := tx.Exec(`INSERT INTO events (id, type, body) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING`, e.ID, e.Type, string(e.Data))
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		fresh, _ := res.RowsAffected()
		// Fulfil here, in tx, only when fresh == 1: a repeated event was
		// fulfilled by its first delivery.
		if err := tx.Commit(); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if fresh == 1 {
			var d struct {
				Purchase struct {
					ID           string
					Quantity     int64
					ResourceType string
				}
				BillingAccount struct{ AccountReference string }
			}
			json.Unmarshal(e.Data, &d)
			fmt.Fprintf(out, "%s %s: %d %s for %s\n", e.ID, e.Type, d.Purchase.Quantity, d.Purchase.ResourceType, d.BillingAccount.AccountReference)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, page := range []string{"paid", "cancelled"} {
		mux.HandleFunc("GET /"+page, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><title>%s</title><h1 id=%q>Back at the shop: %s</h1>", page, page, page)
		})
	}
	return mux, nil
}
