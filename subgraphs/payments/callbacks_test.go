package payments_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/payments"
)

// receiver is a callback endpoint: it answers what answer says and keeps
// every request it got.
type receiver struct {
	mu     sync.Mutex
	got    []received
	answer func(n int) int // status of the n-th request (1-based)
	srv    *httptest.Server
}

type received struct {
	timestamp, signature string
	body                 []byte
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Get("X-Service-Timestamp"), r.Header.Get("X-Service-Signature"), b})
		n := len(rc.got)
		rc.mu.Unlock()
		w.WriteHeader(rc.answer(n))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// verifies reports whether a request is signed by secret as the spec says.
func verifies(r received, secret string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(r.timestamp + "." + string(r.body)))
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	for _, v := range strings.Split(r.signature, ",") {
		if hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

// callbackShop is a client with a callback URL, and a purchase of its that
// succeeds (which writes a purchase.succeeded event).
func callbackShop(t *testing.T, f *fixture, url string) (*payments.Client, string) {
	t.Helper()
	ctx := context.Background()
	c, _, signing, err := f.svc.CreateClient(ctx, payments.NewClient{Name: "shop", CallbackURL: url, ReturnURLs: []string{"https://shop.example/paid"}})
	if err != nil {
		t.Fatal(err)
	}
	return c, signing
}

// pay makes a session of the client's and pays it with the sandbox.
func pay(t *testing.T, f *fixture, c *payments.Client, number string) *payments.ConfirmResult {
	t.Helper()
	ctx := context.Background()
	pm := must(f.svc.CreateMerchant(ctx, "", payments.NewMerchant{Name: "p", Gateway: "sandbox"}))(t)
	must(f.svc.SetMerchantCredentials(ctx, "", pm.ID, []byte(`{"apiKey":"x"}`)))(t)
	o := must(f.svc.CreateOffer(ctx, nil, payments.NewOffer{ResourceType: payments.AICredits, Name: "10", Quantity: 10, Price: 100, Currency: "USD", MerchantID: pm.ID}))(t)
	a := must(f.svc.ResolveAccount(ctx, c, payments.AccountRequest{Reference: "customer"}))(t)
	created, err := f.svc.CreateSession(ctx, c, payments.NewSession{AccountID: a.ID, OfferID: o.ID, ReturnURL: "https://shop.example/paid"})
	if err != nil {
		t.Fatal(err)
	}
	sess, token := created.Session, created.Token
	must(f.svc.Redeem(ctx, token, sess.ID))(t)
	card := must(f.svc.AddCard(ctx, sess.ID, a.ID, payments.CardInput{Number: number, ExpMonth: 12, ExpYear: 2031, CVC: "123"}))(t)
	return must(f.svc.Confirm(ctx, sess.ID, a.ID, sess.PurchaseID, card.ID))(t)
}

func TestCallbacks(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		// The receiver fails twice (a 500, then a redirect), then acknowledges.
		rc := newReceiver(t, func(n int) int { return map[int]int{1: 500, 2: 302}[n] + map[bool]int{true: 204}[n > 2] })
		c, signing := callbackShop(t, f, rc.srv.URL+"/hooks")
		res := pay(t, f, c, "4242424242424242")
		if res.Purchase.State != payments.PurchaseSucceeded {
			t.Fatalf("purchase: %+v", res.Purchase)
		}
		es := must(f.st.Events(ctx, c.ID, "", 10))(t)
		if len(es) != 1 || es[0].Type != payments.EventPurchaseSucceeded || es[0].SubjectID != res.Purchase.ID || es[0].State != payments.EventPending {
			t.Fatalf("outbox after the purchase: %+v", es)
		}
		var body struct {
			ID, Type, CreatedAt string
			Data                struct {
				Purchase       struct{ ID, State string }
				BillingAccount struct{ AccountReference string }
			}
		}
		if err := json.Unmarshal(es[0].Body, &body); err != nil || body.ID != es[0].ID || body.Data.Purchase.State != "succeeded" ||
			body.Data.BillingAccount.AccountReference != "customer" || !strings.HasSuffix(body.CreatedAt, "Z") {
			t.Fatalf("event body %s: %v", es[0].Body, err)
		}

		sender := payments.NewSender(f.svc, 2*time.Second, 24*time.Hour)
		for attempt := 1; attempt <= 3; attempt++ {
			if n := must(sender.RunOnce(ctx))(t); n != 1 {
				t.Fatalf("attempt %d: sent %d", attempt, n)
			}
			if n := must(sender.RunOnce(ctx))(t); n != 0 {
				t.Fatalf("attempt %d: an event was sent again before its backoff", attempt)
			}
			f.clock.t = f.clock.t.Add(time.Hour) // past any backoff
		}
		got := rc.requests()
		if len(got) != 3 {
			t.Fatalf("%d deliveries, want 3", len(got))
		}
		for i, r := range got {
			if !verifies(r, signing) || string(r.body) != string(es[0].Body) {
				t.Fatalf("delivery %d is not signed by the client's secret over the event: %+v", i+1, r)
			}
			if ts, _ := strconv.ParseInt(r.timestamp, 10, 64); i > 0 && ts <= must(strconv.ParseInt(got[i-1].timestamp, 10, 64))(t) {
				t.Fatalf("delivery %d reuses a timestamp: %s", i+1, r.timestamp)
			}
		}
		e := must(f.st.Event(ctx, es[0].ID))(t)
		attempts := must(f.st.Attempts(ctx, e.ID))(t)
		if e.State != payments.EventDelivered || e.Attempts != 3 || len(attempts) != 3 || attempts[0].Status != 500 || attempts[1].Status != 302 || attempts[2].Status != 204 {
			t.Fatalf("after 500, 302, 204: %+v %+v", e, attempts)
		}

		// Replay sends a delivered event again, same ID and body.
		if err := f.st.ReplayEvent(ctx, e.ID, f.clock.t); err != nil {
			t.Fatal(err)
		}
		must(sender.RunOnce(ctx))(t)
		if got := rc.requests(); len(got) != 4 || string(got[3].body) != string(e.Body) {
			t.Fatalf("replay: %d deliveries", len(got))
		}
		if err := f.st.RetryEvent(ctx, e.ID, f.clock.t); err == nil {
			t.Fatal("retrying a delivered event is refused (replay it)")
		}

		// Rotation: both secrets sign during the grace period, then the new one.
		newSecret, _, err := f.svc.RotateSigningSecret(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		must(f.svc.RefundPurchase(ctx, res.Purchase.ID, "test"))(t)
		must(sender.RunOnce(ctx))(t)
		last := rc.requests()[len(rc.requests())-1]
		if strings.Count(last.signature, "v1=") != 2 || !verifies(last, signing) || !verifies(last, newSecret) || !strings.Contains(string(last.body), `"purchase.refunded"`) {
			t.Fatalf("during the rotation: %s %s", last.signature, last.body)
		}
		f.clock.t = f.clock.t.Add(payments.SigningGrace)
		ok(t, f.st.ReplayEvent(ctx, e.ID, f.clock.t))
		must(sender.RunOnce(ctx))(t)
		last = rc.requests()[len(rc.requests())-1]
		if strings.Count(last.signature, "v1=") != 1 || verifies(last, signing) || !verifies(last, newSecret) {
			t.Fatalf("after the grace period: %s", last.signature)
		}
	})
}

// A 410 turns the client's callbacks off; nothing is sent until an operator
// turns them on again. An event unacknowledged for the maximum age fails.
func TestCallbacksGoneAndGivenUp(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		gone := newReceiver(t, func(int) int { return http.StatusGone })
		c, _ := callbackShop(t, f, gone.srv.URL)
		pay(t, f, c, "4242424242424242")
		sender := payments.NewSender(f.svc, 2*time.Second, 2*time.Hour)
		must(sender.RunOnce(ctx))(t)
		if cl := must(f.st.Client(ctx, c.ID))(t); cl.CallbacksDisabledAt == nil {
			t.Fatal("a 410 did not turn callbacks off")
		}
		pay(t, f, c, "5555555555554444")
		f.clock.t = f.clock.t.Add(time.Hour)
		if n := must(sender.RunOnce(ctx))(t); n != 0 || len(gone.requests()) != 1 {
			t.Fatalf("sent %d after a 410 (%d requests)", n, len(gone.requests()))
		}
		ok(t, f.st.SetCallbacksOn(ctx, c.ID, true, f.clock.t))
		if n := must(sender.RunOnce(ctx))(t); n != 2 {
			t.Fatalf("after callbacks were turned on: sent %d, want the 2 waiting", n)
		}

		down := newReceiver(t, func(int) int { return 503 })
		c2, _ := callbackShop(t, f, down.srv.URL)
		pay(t, f, c2, "4242424242424242")
		for range 20 {
			must(sender.RunOnce(ctx))(t)
			f.clock.t = f.clock.t.Add(20 * time.Minute)
		}
		es := must(f.st.Events(ctx, c2.ID, "", 10))(t)
		if len(es) != 1 || es[0].State != payments.EventFailed || es[0].Attempts < 3 || !strings.Contains(es[0].LastError, "503") {
			t.Fatalf("an event past its maximum age: %+v", es)
		}
		if err := f.st.RetryEvent(ctx, es[0].ID, f.clock.t); err != nil {
			t.Fatalf("retry a failed event: %v", err)
		}
	})
}

// While a client's callbacks are off, its pending events are parked: the
// sender's claim does not walk them (TestHotStatementsSearch holds its plan),
// they still show as pending, and every one of them is sent once callbacks
// are on again, whether it was written, retried or being sent when they went
// off.
func TestEventsParkWhileCallbacksAreOff(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		var c *payments.Client
		// The first request turns the client's callbacks off while it is
		// being sent, and fails; every later one is acknowledged.
		rc := newReceiver(t, func(n int) int {
			if n == 1 {
				if err := f.st.SetCallbacksOn(ctx, c.ID, false, f.clock.t); err != nil {
					t.Error(err)
				}
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		})
		c, _ = callbackShop(t, f, rc.srv.URL)
		parked := func() (n int) {
			t.Helper()
			ok(t, f.st.DB().GetContext(ctx, &n, f.st.DB().Rebind(`SELECT COUNT(*) FROM callback_events WHERE client_id = ? AND parked = 1`), c.ID))
			return n
		}
		sender := payments.NewSender(f.svc, 2*time.Second, 24*time.Hour)

		pay(t, f, c, "4242424242424242")
		if n := must(sender.RunOnce(ctx))(t); n != 1 || parked() != 1 {
			t.Fatalf("an event whose client's callbacks went off while it was sent: sent %d, %d parked", n, parked())
		}
		pay(t, f, c, "5555555555554444") // written while off
		f.clock.t = f.clock.t.Add(time.Hour)
		if n := must(sender.RunOnce(ctx))(t); n != 0 || parked() != 2 {
			t.Fatalf("callbacks off: sent %d, %d parked", n, parked())
		}
		es := must(f.st.Events(ctx, c.ID, "", 10))(t)
		for _, e := range es {
			if e.State != payments.EventPending {
				t.Fatalf("a parked event shows as %q, want pending", e.State)
			}
		}
		ok(t, f.st.RetryEvent(ctx, es[0].ID, f.clock.t)) // retried while off
		if n := must(sender.RunOnce(ctx))(t); n != 0 || parked() != 2 {
			t.Fatalf("an event retried while callbacks are off: sent %d, %d parked", n, parked())
		}

		ok(t, f.st.SetCallbacksOn(ctx, c.ID, true, f.clock.t))
		if parked() != 0 {
			t.Fatalf("callbacks on: %d events still parked", parked())
		}
		if n := must(sender.RunOnce(ctx))(t); n != 2 {
			t.Fatalf("callbacks on: sent %d, want the 2 waiting", n)
		}
		ok(t, f.st.SetCallbacksOn(ctx, c.ID, false, f.clock.t)) // nothing pending: nothing parks
		ok(t, f.st.SetCallbacksOn(ctx, c.ID, true, f.clock.t))
		pay(t, f, c, "4242424242424242")
		if n := must(sender.RunOnce(ctx))(t); n != 1 || parked() != 0 || len(rc.requests()) != 4 {
			t.Fatalf("callbacks on again: sent %d, %d parked, %d requests", n, parked(), len(rc.requests()))
		}
		if err := f.st.SetCallbacksOn(ctx, "sc_missing", true, f.clock.t); !errors.Is(err, payments.ErrNotFound) {
			t.Fatalf("callbacks of a client that does not exist: %v", err)
		}
	})
}

// Attempts told 410 at once all record it, none waiting on another (on
// PostgreSQL each locks the client's row for update before it turns the
// client's callbacks off: two holding it shared could each wait for the
// other), and every event still pending is parked.
func TestAttemptsToldGoneAtOnce(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		c, _ := callbackShop(t, f, "https://shop.example/hooks")
		for range 8 {
			pay(t, f, c, "4242424242424242")
		}
		now := f.clock.t
		evs := must(f.st.ClaimEvents(ctx, "sender", now, now.Add(time.Minute), 20))(t)
		if len(evs) != 8 {
			t.Fatalf("claimed %d events, want 8", len(evs))
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, e := range evs {
			wg.Go(func() {
				<-start
				err := f.st.FinishAttempt(ctx, payments.CallbackAttempt{EventID: e.ID, Attempt: 1, StartedAt: now, Status: http.StatusGone},
					payments.AttemptOutcome{State: payments.EventPending, DisableClient: true})
				if err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if cl := must(f.st.Client(ctx, c.ID))(t); cl.CallbacksDisabledAt == nil {
			t.Fatal("410s did not turn callbacks off")
		}
		var parked int
		db := f.st.DB()
		ok(t, db.GetContext(ctx, &parked, db.Rebind(`SELECT COUNT(*) FROM callback_events WHERE client_id = ? AND state = 'pending' AND parked = 1`), c.ID))
		if parked != 8 {
			t.Fatalf("after 410s: %d of 8 pending events parked", parked)
		}
	})
}

// A receiver that does not answer in time is retried, and the attempt says
// how long it waited.
func TestCallbackTimeout(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		defer slow.Close()
		defer close(release)
		c, _ := callbackShop(t, f, slow.URL)
		pay(t, f, c, "4242424242424242")
		must(payments.NewSender(f.svc, 200*time.Millisecond, time.Hour).RunOnce(ctx))(t)
		es := must(f.st.Events(ctx, c.ID, "", 1))(t)
		if es[0].State != payments.EventPending || es[0].LastError != "no answer within 200ms" {
			t.Fatalf("after a timeout: %+v", es[0])
		}
	})
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Senders running at once (replicas) deliver every event once.
func TestSendersNeverDeliverTwice(t *testing.T) {
	each(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, func(int) int { return 200 })
		c, _ := callbackShop(t, f, rc.srv.URL)
		const n = 12
		for range n {
			pay(t, f, c, "4242424242424242")
		}
		var wg sync.WaitGroup
		for range 4 {
			sender := payments.NewSender(f.svc, 2*time.Second, 24*time.Hour)
			wg.Go(func() {
				for range 5 {
					if _, err := sender.RunOnce(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		seen := map[string]int{}
		for _, r := range rc.requests() {
			var e struct{ ID string }
			json.Unmarshal(r.body, &e)
			seen[e.ID]++
		}
		if len(seen) != n {
			t.Fatalf("%d of %d events delivered", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Fatalf("%s delivered %d times", id, k)
			}
		}
	})
}
