package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/sdk/callback"
	paymentssql "github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// The fault tests kill real processes (SIGKILL, as a power cut would) where
// money and fulfillment are most at risk, restart them, and check that every
// purchase was captured once and fulfilled exactly once at the receiver.

// receiverEnv makes the re-executed test binary a callback receiver.
const receiverEnv = "VITOLA_TEST_RECEIVER"

// runReceiver is a fulfillment receiver built on sdk/callback, as an
// integrator would write it: it verifies, records the event and applies it
// in one SQL transaction (deduplicating on the event ID, never moving a
// purchase's state backwards), and acknowledges only after the commit.
//
//	VITOLA_TEST_RECEIVER_KILL_AFTER_RECORD=FILE: the first time, die after
//	   the commit and before the acknowledgement (FILE marks that it did)
//	VITOLA_TEST_RECEIVER_FAIL_FIRST=N: answer 500 to the first N callbacks
//	VITOLA_TEST_RECEIVER_REFUND_FIRST=1: answer 500 to a purchase.succeeded
//	   until its purchase's refund came (out-of-order deliveries)
func runReceiver(addr, dbPath, secret string) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		return err
	}
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, type TEXT NOT NULL, purchase TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS purchases (id TEXT PRIMARY KEY, state TEXT NOT NULL, rank INTEGER NOT NULL, applied INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS deliveries (event TEXT NOT NULL)`,
	} {
		if _, err := db.Exec(ddl); err != nil {
			return err
		}
	}
	// A purchase's states in order; an event never takes it back.
	rank := map[string]int{callback.PurchaseSucceeded: 1, callback.PurchaseRefunded: 2}
	failFirst, _ := strconv.Atoi(os.Getenv("VITOLA_TEST_RECEIVER_FAIL_FIRST"))
	killMark := os.Getenv("VITOLA_TEST_RECEIVER_KILL_AFTER_RECORD")
	refundFirst := os.Getenv("VITOLA_TEST_RECEIVER_REFUND_FIRST") == "1"
	var seen atomic.Int64
	h := callback.Handler(callback.Verifier{Secrets: []string{secret}}, func(w http.ResponseWriter, r *http.Request, e *callback.Event) {
		db.Exec(`INSERT INTO deliveries (event) VALUES (?)`, e.ID)
		if seen.Add(1) <= int64(failFirst) {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		var data struct{ Purchase struct{ ID string } }
		json.Unmarshal(e.Data, &data)
		if refundFirst && e.Type == callback.PurchaseSucceeded {
			var refunded int
			db.QueryRow(`SELECT COUNT(*) FROM events WHERE purchase = ? AND type = ?`, data.Purchase.ID, callback.PurchaseRefunded).Scan(&refunded)
			if refunded == 0 {
				http.Error(w, "not before its refund", http.StatusInternalServerError)
				return
			}
		}
		tx, err := db.Begin()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer tx.Rollback()
		res, err := tx.Exec(`INSERT INTO events (id, type, purchase) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING`, e.ID, e.Type, data.Purchase.ID)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if n, _ := res.RowsAffected(); n == 1 && rank[e.Type] > 0 {
			if _, err := tx.Exec(`INSERT INTO purchases (id, state, rank, applied) VALUES (?, ?, ?, 1)
				ON CONFLICT (id) DO UPDATE SET state = excluded.state, rank = excluded.rank, applied = purchases.applied + 1 WHERE excluded.rank > purchases.rank`,
				data.Purchase.ID, e.Type, rank[e.Type]); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
		}
		if err := tx.Commit(); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if killMark != "" {
			if _, err := os.Stat(killMark); errors.Is(err, os.ErrNotExist) {
				os.WriteFile(killMark, nil, 0o644)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return http.ListenAndServe(addr, h)
}

// faultRig is the platform and the receiver, as processes.
type faultRig struct {
	t           *testing.T
	data        string // the platform's data directory
	dbURL       string // PostgreSQL, or "" for SQLite
	internalKey string
	api, pay    string // addresses
	recvAddr    string
	recvDB      string
	secret      string // the client's signing secret
	serve       *proc
	receiver    *proc
	client      [2]string // ID and secret
	demoKeyID   string
	account     string
	offer       string
}

func (rg *faultRig) storeArgs() []string {
	if rg.dbURL != "" {
		return []string{"--database-url", rg.dbURL}
	}
	return []string{"--data", rg.data}
}

// keyArgs are storeArgs with the internal key, for the commands that seal
// (serve, payments): on PostgreSQL they must agree on it.
func (rg *faultRig) keyArgs() []string {
	if rg.dbURL != "" {
		return append(rg.storeArgs(), "--internal-key", rg.internalKey)
	}
	return rg.storeArgs()
}

// startServe starts the platform, to be killed at killAt ("" : never).
func (rg *faultRig) startServe(killAt string) {
	rg.t.Helper()
	if rg.serve != nil {
		rg.serve.kill()
	}
	args := append([]string{"serve", "--demo", "--addr", rg.api, "--payments-addr", rg.pay, "--payments-public-url", "http://" + rg.pay,
		"--charge-lease", "2s", "--log-format", "json"}, rg.keyArgs()...)
	var env []string
	if killAt != "" {
		env = append(env, "VITOLA_TEST_KILL_AT="+killAt)
	}
	rg.serve = startProc(rg.t, "serve", args, env, nil)
	waitHealthy(rg.t, rg.serve, "http://"+rg.pay+"/health")
}

// startReceiver starts the receiver with its faults.
func (rg *faultRig) startReceiver(env ...string) {
	rg.t.Helper()
	if rg.receiver != nil {
		rg.receiver.kill()
	}
	p := &proc{log: &logBuffer{}, done: make(chan struct{})}
	_ = p
	rg.receiver = startProc(rg.t, "receiver", nil, append([]string{receiverEnv + "=" + rg.recvAddr + "|" + rg.recvDB + "|" + rg.secret}, env...), nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Post("http://"+rg.recvAddr+"/", "application/json", strings.NewReader("{}"))
		if err == nil {
			res.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			rg.t.Fatalf("the receiver did not start: %v\n%s", err, rg.receiver.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitHealthy(t *testing.T, p *proc, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("the process exited while starting: %v\n%s", p.err, p.log.String())
		}
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy within 60 s\n%s", url, p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call sends a request to the payments origin and decodes its answer; err is
// the transport's (a killed server).
func (rg *faultRig) call(method, path, body string, headers map[string]string) (int, map[string]any, error) {
	req, _ := http.NewRequest(method, "http://"+rg.pay+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out struct{ Data map[string]any }
	json.Unmarshal(b, &out)
	if res.StatusCode >= 300 {
		return res.StatusCode, map[string]any{"body": string(b)}, nil
	}
	return res.StatusCode, out.Data, nil
}

func (rg *faultRig) trusted(method, path, body string, extra ...string) map[string]any {
	rg.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + rg.client[1], "X-Service-Client-Id": rg.client[0]}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	status, data, err := rg.call(method, "/api/v1"+path, body, h)
	if err != nil || status >= 300 {
		rg.t.Fatalf("%s %s: %d %v %v", method, path, status, data, err)
	}
	return data
}

// checkout makes a session, redeems it and saves a card; it returns the
// browser's headers (cookie included) and the purchase to confirm.
func (rg *faultRig) checkout(name string) (map[string]string, string, string) {
	rg.t.Helper()
	s := rg.trusted("POST", "/payment-sessions", fmt.Sprintf(`{"billingAccountId": %q, "offerId": %q, "returnUrl": "https://shop.example/paid"}`, rg.account, rg.offer), "Idempotency-Key", name)
	u, _ := url.Parse(s["url"].(string))
	token := strings.TrimPrefix(u.Fragment, "token=")
	browser := map[string]string{"Origin": "http://" + rg.pay, "X-Vitola-Checkout": "1"}
	req, _ := http.NewRequest("POST", "http://"+rg.pay+"/api/v1/payment-sessions/redeem", strings.NewReader(`{"token": "`+token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range browser {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		rg.t.Fatalf("redeem: %v %v", res, err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		browser["Cookie"] = c.Name + "=" + c.Value
	}
	status, m, err := rg.call("POST", "/api/pci/v1/payment-methods", `{"number": "4242424242424242", "expMonth": 12, "expYear": 2031, "cvc": "123"}`, browser)
	if err != nil || status != 201 {
		rg.t.Fatalf("add a card: %d %v %v", status, m, err)
	}
	return browser, s["purchase"].(map[string]any)["id"].(string), m["id"].(string)
}

func (rg *faultRig) confirm(browser map[string]string, purchase, method, key string) (int, error) {
	h := map[string]string{"Idempotency-Key": key}
	for k, v := range browser {
		h[k] = v
	}
	status, _, err := rg.call("POST", "/api/v1/purchase-intents/"+purchase+"/confirm", `{"paymentMethodId": "`+method+`"}`, h)
	return status, err
}

func (rg *faultRig) openStore() *paymentssql.Store {
	rg.t.Helper()
	cfg := sqldb.Config{DataDir: rg.data, DatabaseURL: rg.dbURL}
	st, err := paymentssql.Open(context.Background(), cfg)
	if err != nil {
		rg.t.Fatal(err)
	}
	rg.t.Cleanup(func() { st.Close() })
	return st
}

// charges counts the sandbox charges made for a purchase (its attempt keys
// begin with its ID).
func (rg *faultRig) charges(purchase string) int {
	var n int
	db := rg.openStore().DB()
	if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM sandbox_charges WHERE idempotency_key LIKE ?`), purchase+":%"); err != nil {
		rg.t.Fatal(err)
	}
	return n
}

// received is what the receiver applied for a purchase: its state, how many
// times a state was applied, and how many deliveries of its events came.
func (rg *faultRig) received(purchase string) (state string, applied, events int) {
	db, err := sql.Open("sqlite", "file:"+rg.recvDB+"?_pragma=busy_timeout(5000)")
	if err != nil {
		rg.t.Fatal(err)
	}
	defer db.Close()
	db.QueryRow(`SELECT state, applied FROM purchases WHERE id = ?`, purchase).Scan(&state, &applied)
	db.QueryRow(`SELECT COUNT(*) FROM events WHERE purchase = ?`, purchase).Scan(&events)
	return state, applied, events
}

// waitReceived waits until the receiver holds the state for a purchase.
func (rg *faultRig) waitReceived(purchase, state string, within time.Duration) {
	rg.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if got, _, _ := rg.received(purchase); got == state {
			return
		}
		if time.Now().After(deadline) {
			got, applied, events := rg.received(purchase)
			st := rg.openStore()
			p, _ := st.Purchase(context.Background(), purchase)
			es, _ := st.Events(context.Background(), "", "", 20)
			rg.t.Fatalf("%s: the receiver has %q (applied %d, %d events) after %s, want %s\npurchase %+v\nevents %+v\nplatform:\n%s\nreceiver:\n%s", purchase, got, applied, events, within, state,
				p, es, tail(rg.serve.log.String(), 3000), rg.receiver.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestFaultsCaptureOnceFulfillOnce(t *testing.T) {
	backends := map[string]string{sqldb.SQLite: ""}
	if u := os.Getenv("VITOLA_TEST_DATABASE_URL"); u != "" {
		backends[sqldb.Postgres] = u
	} else if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1 but VITOLA_TEST_DATABASE_URL is not set")
	}
	for backend, adminURL := range backends {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			rg := &faultRig{t: t, data: filepath.Join(dir, "data"), internalKey: randomHex(32), api: loopbackAddr(t), pay: loopbackAddr(t),
				recvAddr: loopbackAddr(t), recvDB: filepath.Join(dir, "receiver.db")}
			if adminURL != "" {
				rg.dbURL = createTestDatabase(t, adminURL)
			}
			rg.startServe("")
			// The operator's client, bound to the demo key, with the receiver as its callback.
			out, err := admin(t, append([]string{"keys", "list"}, rg.storeArgs()...)...)
			if err != nil {
				t.Fatal(err, out)
			}
			keys, _ := admin(t, append([]string{"keys", "create", "--name", "buyer"}, rg.storeArgs()...)...)
			rg.demoKeyID = "key_" + strings.Split(keys, "_")[1]
			line, err := admin(t, append([]string{"payments", "clients", "create", "--name", "shop", "--developer-key", rg.demoKeyID,
				"--return-url", "https://shop.example/paid", "--callback-url", "http://" + rg.recvAddr + "/hooks"}, rg.keyArgs()...)...)
			creds := strings.Fields(line)
			if err != nil || len(creds) != 3 {
				t.Fatalf("clients create: %q %v", line, err)
			}
			rg.client, rg.secret = [2]string{creds[0], creds[1]}, creds[2]
			rg.startReceiver()
			rg.account = rg.trusted("POST", "/billing-accounts/resolve", `{"accountReference": "`+rg.demoKeyID+`"}`)["id"].(string)
			offers := rg.openStore()
			o, err := offers.ActiveOffers(context.Background(), "", "ai_credits")
			if err != nil || len(o) == 0 {
				t.Fatal("no demo offers", err)
			}
			rg.offer = o[len(o)-1].ID // 100 credits

			// A: killed between the gateway's capture and the commit. The
			// charge's lease lapses and the worker repeats the attempt under
			// its key: the sandbox answers the first charge.
			rg.startServe("payments.after-capture")
			browser, pA, card := rg.checkout("A")
			if _, err := rg.confirm(browser, pA, card, "confirm-A"); err == nil {
				t.Fatal("the confirm answered although the platform was to die")
			}
			<-rg.serve.done
			rg.startServe("")
			rg.waitReceived(pA, callback.PurchaseSucceeded, 30*time.Second)

			// B: killed after the commit, before the answer: the event is in
			// the outbox and is sent after the restart.
			rg.startServe("payments.after-commit")
			browser, pB, card := rg.checkout("B")
			if _, err := rg.confirm(browser, pB, card, "confirm-B"); err == nil {
				t.Fatal("the confirm answered although the platform was to die")
			}
			<-rg.serve.done
			rg.startServe("")
			rg.waitReceived(pB, callback.PurchaseSucceeded, 30*time.Second)

			// C: killed while sending: the receiver recorded and acknowledged
			// the event, the platform died before recording the attempt, and
			// sends it again after the restart.
			browser, pC, card := rg.checkout("C")
			rg.startServe("payments.callback-sent")
			if status, err := rg.confirm(browser, pC, card, "confirm-C"); err != nil || status != 200 {
				t.Fatalf("confirm C: %d %v", status, err)
			}
			<-rg.serve.done
			rg.startServe("")
			rg.waitReceived(pC, callback.PurchaseSucceeded, 30*time.Second)

			// D: the receiver dies after recording, before acknowledging; E:
			// it answers 500 first. Both are retried and applied once.
			rg.startReceiver("VITOLA_TEST_RECEIVER_KILL_AFTER_RECORD=" + filepath.Join(dir, "killed-once"))
			browser, pD, card := rg.checkout("D")
			if status, err := rg.confirm(browser, pD, card, "confirm-D"); err != nil || status != 200 {
				t.Fatalf("confirm D: %d %v", status, err)
			}
			<-rg.receiver.done
			rg.startReceiver("VITOLA_TEST_RECEIVER_FAIL_FIRST=1")
			rg.waitReceived(pD, callback.PurchaseSucceeded, 30*time.Second)

			// F: refunded, then its purchase.succeeded replayed: a duplicate
			// after a later state never takes the purchase back.
			if line, err := admin(t, append(append([]string{"payments", "purchases", "refund"}, rg.keyArgs()...), pA)...); err != nil {
				t.Fatalf("refund: %q %v", line, err)
			}
			rg.waitReceived(pA, callback.PurchaseRefunded, 30*time.Second)
			events, _ := rg.openStore().Events(context.Background(), rg.client[0], "", 100)
			for _, e := range events {
				if e.SubjectID == pA && e.Type == "purchase.succeeded" {
					if line, err := admin(t, append(append([]string{"payments", "events", "replay"}, rg.keyArgs()...), e.ID)...); err != nil {
						t.Fatalf("replay: %q %v", line, err)
					}
				}
			}
			time.Sleep(3 * time.Second) // the sender sends the replay within a second or two

			// G: out of order: the purchase's refund reaches the receiver
			// before its success; the success, applied after, changes nothing.
			rg.startReceiver("VITOLA_TEST_RECEIVER_REFUND_FIRST=1")
			browser, pG, card := rg.checkout("G")
			if status, err := rg.confirm(browser, pG, card, "confirm-G"); err != nil || status != 200 {
				t.Fatalf("confirm G: %d %v", status, err)
			}
			if line, err := admin(t, append(append([]string{"payments", "purchases", "refund"}, rg.keyArgs()...), pG)...); err != nil {
				t.Fatalf("refund G: %q %v", line, err)
			}
			rg.waitReceived(pG, callback.PurchaseRefunded, 30*time.Second)
			deadline := time.Now().Add(40 * time.Second)
			for _, _, n := rg.received(pG); n < 2 && time.Now().Before(deadline); _, _, n = rg.received(pG) {
				time.Sleep(200 * time.Millisecond) // the success's retry
			}
			if state, applied, n := rg.received(pG); state != callback.PurchaseRefunded || applied != 1 || n != 2 {
				t.Errorf("out of order: %s applied %d times from %d events, want refunded once from 2", state, applied, n)
			}

			for _, p := range []string{pA, pB, pC, pD} {
				if n := rg.charges(p); n != 1 {
					t.Errorf("%s was charged %d times", p, n)
				}
				want := callback.PurchaseSucceeded
				if p == pA {
					want = callback.PurchaseRefunded
				}
				if state, applied, _ := rg.received(p); state != want || applied != map[bool]int{true: 2, false: 1}[p == pA] {
					t.Errorf("%s at the receiver: %s applied %d times, want %s", p, state, applied, want)
				}
			}
			a, err := rg.openStore().Account(context.Background(), rg.demoKeyID)
			if err != nil || a.Credits() != 300 {
				t.Errorf("the key's credits: %d, want 300 (four purchases of 100, one refunded) %v", a.Credits(), err)
			}
			if c, err := rg.openStore().CheckLedger(context.Background()); err != nil || c != (paymentssql.LedgerCheck{}) {
				t.Errorf("ledger: %+v %v", c, err)
			}
		})
	}
}
