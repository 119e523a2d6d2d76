package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/payments"
	paymentssql "github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// syncBuffer is a log sink the platform writes to from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// payFixture is the platform with its payments origin on a real HTTP server.
type payFixture struct {
	p    *platform.Platform
	api  *httptest.Server
	pay  *httptest.Server
	cfg  sqldb.Config
	logs *syncBuffer
}

const paymentsURL = "https://pay.vitola.test"

func openPayments(t testing.TB, cfg sqldb.Config) *payFixture {
	t.Helper()
	return openPaymentsOn(t, cfg, nil, paymentsURL)
}

// openPaymentsOn serves the payments origin on ln (nil: a new loopback
// listener), public as paymentsPublic.
func openPaymentsOn(t testing.TB, cfg sqldb.Config, ln net.Listener, paymentsPublic string) *payFixture {
	t.Helper()
	return openPaymentsLogging(t, cfg, ln, paymentsPublic, zerolog.DebugLevel)
}

// openPaymentsLogging is openPaymentsOn logging from level up (tests read
// debug lines; a load test logs as a server does by default, from info).
func openPaymentsLogging(t testing.TB, cfg sqldb.Config, ln net.Listener, paymentsPublic string, level zerolog.Level) *payFixture {
	t.Helper()
	logs := &syncBuffer{}
	p, err := platform.Open(context.Background(), platform.Options{
		Store: cfg, InternalKey: internalKey, Demo: true, PublicURL: publicURL, Logger: zerolog.New(logs).Level(level),
		Payments: platform.PaymentsOptions{PublicURL: paymentsPublic},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	pay := httptest.NewUnstartedServer(p.Payments)
	if ln != nil {
		pay.Listener.Close()
		pay.Listener = ln
	}
	pay.Start()
	f := &payFixture{p: p, cfg: cfg, logs: logs, api: httptest.NewServer(p.API), pay: pay}
	t.Cleanup(f.api.Close)
	t.Cleanup(f.pay.Close)
	return f
}

// client is a service client's credentials.
type client struct{ id, secret string }

func (f *payFixture) client(t testing.TB, n payments.NewClient) client {
	t.Helper()
	if n.Name == "" {
		n.Name = "shop"
	}
	if n.ReturnURLs == nil {
		n.ReturnURLs = []string{"https://shop.example/paid"}
	}
	c, secret, _, err := f.p.PaymentsService.CreateClient(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return client{c.ID, secret}
}

// call sends a request to the payments API as c (zero c: no credentials).
func (f *payFixture) call(t testing.TB, c client, method, path, body string, headers ...string) restResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, f.pay.URL+"/api/v1"+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.id != "" {
		req.Header.Set("Authorization", "Bearer "+c.secret)
		req.Header.Set("X-Service-Client-Id", c.id)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return restResponse{Status: res.StatusCode, Header: res.Header, Body: b}
}

// data decodes a response's data object.
func data(t testing.TB, r restResponse) map[string]any {
	t.Helper()
	var out struct{ Data map[string]any }
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Data == nil {
		t.Fatalf("%d %s: no data object", r.Status, r.Body)
	}
	return out.Data
}

// A revoked service client is refused promptly although verifications and
// client rows are reused for a moment: at once by the process that revoked
// it, within payments.ClientCacheTTL when another process did (the vitola
// CLI writes the store itself), and always with the one 401 of every bad
// credential.
func TestPaymentsClientRevocation(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			ctx := context.Background()
			offers := func(c client) restResponse { return f.call(t, c, "GET", "/offers?resourceType=ai_credits", "") }
			unknown := offers(client{"pcl_0000000000000000", "vps_unknown"}) // the 401 to expect
			if unknown.Status != 401 {
				t.Fatalf("an unknown client: %d %s", unknown.Status, unknown.Body)
			}
			for _, how := range []string{"by this process", "by another process"} {
				c := f.client(t, payments.NewClient{Name: "revoked " + how})
				for range 3 { // verified and its row read: both cached now
					if r := offers(c); r.Status != 200 {
						t.Fatalf("%d %s", r.Status, r.Body)
					}
				}
				t.Run(how, func(t *testing.T) {
					at := time.Now()
					bound := payments.ClientCacheTTL + time.Second/2
					if how == "by this process" {
						if err := f.p.PaymentsService.RevokeClient(ctx, c.id); err != nil {
							t.Fatal(err)
						}
						bound = 0 // the next request
					} else if err := f.p.PaymentsService.Store.RevokeClient(ctx, c.id, time.Now()); err != nil {
						t.Fatal(err)
					}
					for {
						r := offers(c)
						took := time.Since(at)
						if r.Status == 401 {
							if !bytes.Equal(r.Body, unknown.Body) {
								t.Fatalf("another 401: %s, not %s", r.Body, unknown.Body)
							}
							t.Logf("refused after %s (bound %s)", took.Round(time.Millisecond), bound)
							break
						}
						if r.Status != 200 || took > bound {
							t.Fatalf("%s after the revocation: %d %s", took, r.Status, r.Body)
						}
						time.Sleep(20 * time.Millisecond)
					}
				})
			}
		})
	}
}

// Concurrent requests under one Idempotency-Key create one session: one
// creates it, and each of the others waits for its commit and gets its
// answer replayed (the key is written in the session's own transaction, so
// none is told 409 "in flight"); the store holds a single session.
func TestPaymentSessionsConcurrentSameKey(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			ctx := context.Background()
			shop := f.client(t, payments.NewClient{})
			account := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "same-key"}`))["id"].(string)
			offers, err := f.p.PaymentsService.Store.ActiveOffers(ctx, "", payments.AICredits)
			if err != nil || len(offers) == 0 {
				t.Fatal("no demo offer", err)
			}
			body := `{"billingAccountId": "` + account + `", "offerId": "` + offers[0].ID + `", "returnUrl": "https://shop.example/paid"}`
			const n = 12
			answers := make([]restResponse, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { answers[i] = f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "same") })
			}
			wg.Wait()
			created, firsts := answers[0].Body, 0
			for _, r := range answers {
				switch {
				case r.Status != 201:
					t.Fatalf("%d %s", r.Status, r.Body)
				case !bytes.Equal(r.Body, created):
					t.Fatalf("two different answers under one key:\n%s\n%s", created, r.Body)
				case r.Header.Get("Idempotent-Replayed") == "":
					firsts++
				}
			}
			if firsts != 1 {
				t.Fatalf("%d answers not marked replayed, want 1", firsts)
			}
			if again := f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "same"); again.Status != 201 || !bytes.Equal(again.Body, created) {
				t.Fatalf("the replay: %d %s", again.Status, again.Body)
			}
			var sessions int
			db := f.p.PaymentsService.Store.(*paymentssql.Store).DB()
			if err := db.GetContext(ctx, &sessions, db.Rebind(`SELECT COUNT(*) FROM payment_sessions WHERE client_id = ?`), shop.id); err != nil || sessions != 1 {
				t.Fatalf("%d sessions stored (%v), want 1", sessions, err)
			}
		})
	}
}

func TestPaymentsAPI(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			ctx := context.Background()
			key, _, err := f.p.Keys.CreateKey(ctx, "seller", nil)
			if err != nil {
				t.Fatal(err)
			}
			shop := f.client(t, payments.NewClient{KeyID: key.ID, Origins: []string{"https://shop.example"}, Scopes: []string{payments.ScopeMerchantRead, payments.ScopeMerchantWrite}})
			other := f.client(t, payments.NewClient{Name: "other"})

			t.Run("one 401 for every credential problem", func(t *testing.T) {
				revoked := f.client(t, payments.NewClient{Name: "revoked"})
				if err := f.p.PaymentsService.Store.RevokeClient(ctx, revoked.id, time.Now()); err != nil {
					t.Fatal(err)
				}
				var bodies []string
				for _, c := range []client{{}, {shop.id, "vps_wrong"}, {"pcl_0000000000000000", shop.secret}, {other.id, shop.secret}, revoked, {shop.id, ""}} {
					r := f.call(t, c, "GET", "/offers?resourceType=ai_credits", "")
					if r.Status != 401 || r.code() != "unauthorized" {
						t.Fatalf("%+v: %d %s", c, r.Status, r.Body)
					}
					bodies = append(bodies, string(r.Body))
				}
				for _, b := range bodies[1:] {
					if b != bodies[0] {
						t.Fatalf("401 bodies differ: %s / %s", b, bodies[0])
					}
				}
				r := f.call(t, client{}, "GET", "/offers?resourceType=ai_credits", "", "Authorization", "Bearer "+shop.secret, "Authorization", "Bearer x", "X-Service-Client-Id", shop.id)
				if r.Status != 401 {
					t.Fatalf("two Authorization headers: %d", r.Status)
				}
			})

			var account string
			t.Run("billing accounts", func(t *testing.T) {
				r := f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "`+key.ID+`"}`)
				d := data(t, r)
				account = d["id"].(string)
				bal := d["balances"].([]any)[0].(map[string]any)
				if r.Status != 200 || d["accountReference"] != key.ID || bal["resourceType"] != "ai_credits" || bal["available"] != 0.0 {
					t.Fatalf("the bound key's account: %d %s", r.Status, r.Body)
				}
				if _, err := f.p.Credits.Grant(ctx, key.ID, 40, "test"); err != nil {
					t.Fatal(err)
				}
				if d := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "`+key.ID+`"}`)); d["id"] != account ||
					d["balances"].([]any)[0].(map[string]any)["available"] != 40.0 {
					t.Fatalf("the same account with its credits: %v", d)
				}
				if r := f.call(t, other, "POST", "/billing-accounts/resolve", `{"accountReference": "`+key.ID+`"}`); r.Status != 403 || r.code() != "action_not_allowed" {
					t.Fatalf("a client not bound to the key: %d %s", r.Status, r.Body)
				}
				for _, body := range []string{`{}`, `{"accountReference": ""}`, `{"accountReference": "a b"}`, `{"accountReference": "x", "cardNumber": "4242424242424242"}`} {
					if r := f.call(t, shop, "POST", "/billing-accounts/resolve", body); r.Status != 400 {
						t.Fatalf("%s: %d %s", body, r.Status, r.Body)
					}
				}
				a := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "customer-1"}`))
				b := data(t, f.call(t, other, "POST", "/billing-accounts/resolve", `{"accountReference": "customer-1"}`))
				if a["id"] == b["id"] {
					t.Fatal("two clients' customers with one reference share an account")
				}
			})

			var offer string
			t.Run("offers", func(t *testing.T) {
				r := f.call(t, shop, "GET", "/offers?resourceType=ai_credits", "")
				var list struct{ Data []map[string]any }
				json.Unmarshal(r.Body, &list)
				if r.Status != 200 || len(list.Data) != 2 || list.Data[0]["quantity"] != 500.0 {
					t.Fatalf("the demo offers, cheapest per unit first: %d %s", r.Status, r.Body)
				}
				offer = list.Data[1]["id"].(string)
				if r := f.call(t, shop, "GET", "/offers", ""); r.Status != 400 {
					t.Fatalf("no resourceType: %d", r.Status)
				}
				if r := f.call(t, shop, "GET", "/offers?resourceType=passes", ""); r.Status != 403 {
					t.Fatalf("a type the client does not sell: %d %s", r.Status, r.Body)
				}
				merchant := f.p.PaymentsService
				m, err := merchant.CreateMerchant(ctx, shop.id, payments.NewMerchant{Name: "m", Gateway: "sandbox"})
				if err != nil {
					t.Fatal(err)
				}
				body := `{"resourceType": "ai_credits", "name": "x", "quantity": 1, "price": {"amount": 100, "currency": "USD"}, "merchantAccountId": "` + m.ID + `"}`
				if r := f.call(t, shop, "POST", "/offers", body); r.Status != 400 || r.code() != "idempotency_key_required" {
					t.Fatalf("an offer without an Idempotency-Key: %d %s", r.Status, r.Body)
				}
				if r := f.call(t, shop, "POST", "/offers", body, "Idempotency-Key", "o-1"); r.Status != 403 {
					t.Fatalf("a client's ai_credits offer: %d %s", r.Status, r.Body)
				}
			})

			var session map[string]any
			t.Run("payment sessions", func(t *testing.T) {
				body := `{"billingAccountId": "` + account + `", "offerId": "` + offer + `", "returnUrl": "https://shop.example/paid?o=1", "parentOrigin": "https://shop.example"}`
				r := f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "s-1")
				session = data(t, r)
				url, _ := session["url"].(string)
				if r.Status != 201 || session["state"] != "open" || !strings.HasPrefix(url, paymentsURL+"/checkout/"+session["id"].(string)+"#token=") || len(strings.SplitN(url, "=", 2)[1]) != 43 {
					t.Fatalf("created: %d %s", r.Status, r.Body)
				}
				purchase := session["purchase"].(map[string]any)
				if purchase["state"] != "open" || purchase["price"].(map[string]any)["amount"] != 500.0 {
					t.Fatalf("purchase intent: %v", purchase)
				}
				again := f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "s-1")
				if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, r.Body) {
					t.Fatalf("replay: %d %s", again.Status, again.Header)
				}
				if r := f.call(t, shop, "POST", "/payment-sessions", strings.Replace(body, "o=1", "o=2", 1), "Idempotency-Key", "s-1"); r.Status != 422 || r.code() != "idempotency_key_reused" {
					t.Fatalf("the key with another body: %d %s", r.Status, r.Body)
				}
				if r := f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "s-2", "Idempotency-Key", "s-3"); r.Status != 400 || r.code() != "idempotency_key_required" {
					t.Fatalf("two keys: %d %s", r.Status, r.Body)
				}
				// Keys are the client's own: another client's s-1 is new work.
				noFrame := strings.Replace(body, `, "parentOrigin": "https://shop.example"`, "", 1)
				if r := f.call(t, other, "POST", "/payment-sessions", noFrame, "Idempotency-Key", "s-1"); r.Status != 404 || r.code() != "billing_account_not_found" {
					t.Fatalf("another client's s-1: %d %s", r.Status, r.Body)
				}
				for _, tt := range []struct{ body, code string }{
					{strings.Replace(body, "shop.example/paid", "evil.example/paid", 1), "return_not_allowed"},
					{strings.Replace(body, `"parentOrigin": "https://shop.example"`, `"parentOrigin": "https://evil.example"`, 1), "origin_not_allowed"},
					{strings.Replace(body, offer, "off_0000000000000000", 1), "offer_not_found"},
					{strings.Replace(body, `"returnUrl"`, `"expiresInSeconds": 5, "returnUrl"`, 1), "invalid_request"},
				} {
					r := f.call(t, shop, "POST", "/payment-sessions", tt.body, "Idempotency-Key", "s-"+tt.code)
					if r.code() != tt.code {
						t.Errorf("%s: %d %s", tt.code, r.Status, r.Body)
					}
					// A refusal is not stored: the fixed request runs under the same key.
					if fixed := f.call(t, shop, "POST", "/payment-sessions", body, "Idempotency-Key", "s-"+tt.code); fixed.Status != 201 || fixed.Header.Get("Idempotent-Replayed") != "" {
						t.Errorf("%s: the fixed request under the same key: %d %s", tt.code, fixed.Status, fixed.Body)
					}
				}
				st := f.call(t, shop, "GET", "/payment-sessions/"+session["id"].(string)+"/status", "")
				if d := data(t, st); st.Status != 200 || d["id"] != session["id"] || d["state"] != "open" || d["url"] != nil {
					t.Fatalf("status: %d %s", st.Status, st.Body)
				}
				if r := f.call(t, other, "GET", "/payment-sessions/"+session["id"].(string)+"/status", ""); r.Status != 404 {
					t.Fatalf("another client's session: %d %s", r.Status, r.Body)
				}
			})

			t.Run("merchant accounts keep their credentials secret", func(t *testing.T) {
				const stripeSecret = "sk_test_TOPSECRET_4f9a8c7e"
				const sandboxSecret = "sandbox-TOPSECRET-key"
				r := f.call(t, shop, "POST", "/merchant-accounts", `{"name": "Shop", "gateway": "sandbox"}`)
				m := data(t, r)
				if r.Status != 201 || m["status"] != "unconfigured" || m["credentialsConfigured"] != false {
					t.Fatalf("create: %d %s", r.Status, r.Body)
				}
				id := m["id"].(string)
				var responses []restResponse
				responses = append(responses, f.call(t, shop, "PUT", "/merchant-accounts/"+id+"/credentials", `{"credentials": {"apiKey": "`+sandboxSecret+`"}}`))
				if d := data(t, responses[0]); d["status"] != "configured" || d["credentialsConfigured"] != true {
					t.Fatalf("configured: %s", responses[0].Body)
				}
				responses = append(responses,
					f.call(t, shop, "PUT", "/merchant-accounts/"+id+"/credentials", `{"credentials": {"secretKey": "`+stripeSecret+`"}}`), // the sandbox refuses this shape
					f.call(t, shop, "GET", "/merchant-accounts", ""),
					f.call(t, other, "PUT", "/merchant-accounts/"+id+"/credentials", `{"credentials": {"apiKey": "`+sandboxSecret+`"}}`),
					f.call(t, shop, "POST", "/offers", `{"resourceType": "ai_credits", "name": "`+sandboxSecret+`", "quantity": 1, "price": {"amount": 1, "currency": "USD"}, "merchantAccountId": "`+id+`"}`, "Idempotency-Key", "leak"))
				if responses[1].Status != 400 || responses[3].Status != 403 {
					t.Fatalf("wrong shape %d, another client %d", responses[1].Status, responses[3].Status)
				}
				if r := f.call(t, shop, "PUT", "/merchant-accounts/mer_0000000000000000/credentials", `{"credentials": {"apiKey": "x"}}`); r.Status != 404 || r.code() != "merchant_account_not_found" {
					t.Fatalf("unknown merchant: %d %s", r.Status, r.Body)
				}
				del := f.call(t, shop, "DELETE", "/merchant-accounts/"+id+"/credentials", "")
				if d := data(t, del); d["status"] != "revoked" || d["credentialsConfigured"] != false {
					t.Fatalf("revoked: %s", del.Body)
				}
				// Configure again, so the store holds the secret (sealed) at the end.
				responses = append(responses, f.call(t, shop, "PUT", "/merchant-accounts/"+id+"/credentials", `{"credentials": {"apiKey": "`+sandboxSecret+`"}}`))
				for _, r := range append(responses, del) {
					if strings.Contains(string(r.Body), "TOPSECRET") {
						t.Fatalf("a response shows the credentials: %s", r.Body)
					}
				}
				if strings.Contains(f.logs.String(), "TOPSECRET") {
					t.Fatal("the logs show the credentials")
				}
				scanStore(t, f.cfg, "TOPSECRET")
			})

			t.Run("policies", func(t *testing.T) {
				limited := f.client(t, payments.NewClient{Name: "limited", Denied: []string{payments.ActionCreateSession}})
				if r := f.call(t, limited, "POST", "/payment-sessions", `{"billingAccountId": "x", "offerId": "y", "returnUrl": "https://shop.example/paid"}`, "Idempotency-Key", "p-1"); r.Status != 403 || r.code() != "action_not_allowed" {
					t.Fatalf("a denied action: %d %s", r.Status, r.Body)
				}
				if r := f.call(t, limited, "GET", "/merchant-accounts", ""); r.Status != 403 {
					t.Fatalf("merchant accounts without the scope: %d %s", r.Status, r.Body)
				}
			})

			t.Run("the public graph cannot reach payments", func(t *testing.T) {
				_, plain, err := f.p.Keys.CreateKey(ctx, "graph", nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{
					`{ offers(resourceType: "ai_credits") { id } }`,
					`{ paymentSession(id: "` + session["id"].(string) + `") { id } }`,
					`{ authenticateServiceClient(id: "` + shop.id + `", secret: "` + shop.secret + `") { id } }`,
					`mutation { resolveBillingAccount(accountReference: "x") { id } }`,
					`{ __type(name: "PaymentSession") { name } }`,
				} {
					body, _ := json.Marshal(map[string]string{"query": q})
					req, _ := http.NewRequest("POST", f.api.URL+"/graphql", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("x-service-key", plain)
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if strings.Contains(string(b), `"id":"pss_`) || strings.Contains(string(b), `"id":"pcl_`) || strings.Contains(string(b), `"name":"PaymentSession"`) ||
						(res.StatusCode == 200 && !strings.Contains(string(b), `"errors"`) && !strings.Contains(string(b), `"__type":null`)) {
						t.Fatalf("%s reached payments: %d %s", q, res.StatusCode, b)
					}
				}
			})
		})
	}
}

// scanStore fails when any file of the store holds secret in plain text.
func scanStore(t *testing.T, cfg sqldb.Config, secret string) {
	t.Helper()
	if cfg.DataDir != "" {
		filepath.WalkDir(cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret in plain text", filepath.Base(path))
			}
			return nil
		})
		return
	}
	// PostgreSQL: every text column of every table in the test's schemas.
	db := sqldbtest.MustOpen(t, cfg, "payments", paymentssql.Migrations)
	rows, err := db.QueryxContext(context.Background(), `SELECT table_schema, table_name, column_name FROM information_schema.columns
		WHERE table_schema LIKE $1 AND data_type IN ('text', 'character varying')`, cfg.SchemaPrefix+"%")
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ schema, table, column string }
	var cols []col
	for rows.Next() {
		var c col
		rows.Scan(&c.schema, &c.table, &c.column)
		cols = append(cols, c)
	}
	rows.Close()
	for _, c := range cols {
		var n int
		q := `SELECT COUNT(*) FROM "` + c.schema + `"."` + c.table + `" WHERE "` + c.column + `" LIKE $1`
		if err := db.GetContext(context.Background(), &n, q, "%"+secret+"%"); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%s.%s holds the secret in plain text", c.table, c.column)
		}
	}
	if len(cols) == 0 {
		t.Fatal("no columns scanned")
	}
}
