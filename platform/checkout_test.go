package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// checkoutBrowser is a hosted checkout's browser: it keeps the action cookie and
// sends what the checkout page sends (same Origin, the checkout header).
type checkoutBrowser struct {
	f      *payFixture
	cookie string
}

func (b *checkoutBrowser) do(t *testing.T, method, path, body string, headers ...string) restResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, b.f.pay.URL+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Origin", paymentsURL)
	req.Header.Set("X-Vitola-Checkout", "1")
	if b.cookie != "" {
		req.Header.Set("Cookie", "__Host-vitola-checkout="+b.cookie)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	for _, c := range res.Cookies() {
		if c.Name == "__Host-vitola-checkout" && c.MaxAge > 0 {
			b.cookie = c.Value
		}
	}
	return restResponse{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// checkoutSession creates a session of the demo's first AI-credit offer for
// the key's account through the trusted API; it returns the session and the
// token from its hosted URL.
func (f *payFixture) checkoutSession(t *testing.T, shop client, account, idemKey string) (map[string]any, string) {
	t.Helper()
	offers, err := f.p.PaymentsService.Store.ActiveOffers(context.Background(), "", payments.AICredits)
	if err != nil {
		t.Fatal(err)
	}
	r := f.call(t, shop, "POST", "/payment-sessions", `{"billingAccountId": "`+account+`", "offerId": "`+offers[1].ID+`", "returnUrl": "https://shop.example/paid"}`, "Idempotency-Key", idemKey)
	s := data(t, r)
	u, _ := url.Parse(s["url"].(string))
	return s, strings.TrimPrefix(u.Fragment, "token=")
}

func TestHostedCheckout(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			ctx := context.Background()
			key, _, err := f.p.Keys.CreateKey(ctx, "buyer", nil)
			if err != nil {
				t.Fatal(err)
			}
			shop := f.client(t, payments.NewClient{KeyID: key.ID})
			account := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "`+key.ID+`"}`))["id"].(string)
			credits := func() int64 {
				a, err := f.p.Credits.Account(ctx, key.ID)
				if err != nil {
					t.Fatal(err)
				}
				return a.Credits()
			}

			t.Run("a token is redeemed once, whatever the race", func(t *testing.T) {
				_, token := f.checkoutSession(t, shop, account, "race")
				var wg sync.WaitGroup
				statuses := make([]int, 8)
				for i := range statuses {
					wg.Go(func() {
						b := &checkoutBrowser{f: f}
						statuses[i] = b.do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+token+`"}`).Status
					})
				}
				wg.Wait()
				won := 0
				for _, s := range statuses {
					switch s {
					case 200:
						won++
					case 410:
					default:
						t.Fatalf("redeem answered %d", s)
					}
				}
				if won != 1 {
					t.Fatalf("%d of 8 concurrent redeems won: %v", won, statuses)
				}
			})

			t.Run("the page may be framed by the session's parent origin alone", func(t *testing.T) {
				two := f.client(t, payments.NewClient{Name: "two origins", KeyID: key.ID, Origins: []string{"https://a.example", "https://b.example"}})
				acc := data(t, f.call(t, two, "POST", "/billing-accounts/resolve", `{"accountReference": "`+key.ID+`"}`))["id"].(string)
				offers, _ := f.p.PaymentsService.Store.ActiveOffers(ctx, "", payments.AICredits)
				for parent, want := range map[string]string{"": "frame-ancestors https://a.example https://b.example", "https://b.example": "frame-ancestors https://b.example;"} {
					body := `{"billingAccountId": "` + acc + `", "offerId": "` + offers[0].ID + `", "returnUrl": "https://shop.example/paid"`
					if parent != "" {
						body += `, "parentOrigin": "` + parent + `"`
					}
					s := data(t, f.call(t, two, "POST", "/payment-sessions", body+"}", "Idempotency-Key", fmt.Sprintf("frame-%d", len(parent))))
					res, err := http.Get(f.pay.URL + "/checkout/" + s["id"].(string))
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
					if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp+";", want) {
						t.Fatalf("parent %q: CSP %q, want %q", parent, csp, want)
					}
				}
			})

			t.Run("a token is spent only under its own session's page", func(t *testing.T) {
				s, tok := f.checkoutSession(t, shop, account, "own-page")
				other, _ := f.checkoutSession(t, shop, account, "other-page")
				if r := (&checkoutBrowser{f: f}).do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+tok+`", "sessionId": "`+other["id"].(string)+`"}`); r.Status != 410 {
					t.Fatalf("a token under another session's page: %d %s", r.Status, r.Body)
				}
				if r := (&checkoutBrowser{f: f}).do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+tok+`", "sessionId": "`+s["id"].(string)+`"}`); r.Status != 200 {
					t.Fatalf("the token under its own page afterwards: %d %s", r.Status, r.Body)
				}
			})

			t.Run("invalid, used and expired tokens look alike", func(t *testing.T) {
				_, used := f.checkoutSession(t, shop, account, "used")
				(&checkoutBrowser{f: f}).do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+used+`"}`)
				_, expired := f.checkoutSession(t, shop, account, "expired")
				if _, err := f.p.PaymentsService.Store.ExpireSessions(ctx, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				var bodies []string
				for _, tok := range []string{used, expired, "not-a-token-at-all-but-long-enough-xx", strings.Repeat("A", 43)} {
					r := (&checkoutBrowser{f: f}).do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+tok+`"}`)
					if r.Status != 410 || r.code() != "session_unavailable" || r.Header.Get("Set-Cookie") != "" {
						t.Fatalf("%d %s", r.Status, r.Body)
					}
					bodies = append(bodies, string(r.Body))
				}
				for _, b := range bodies[1:] {
					if b != bodies[0] {
						t.Fatalf("410 bodies differ: %s / %s", b, bodies[0])
					}
				}
			})

			sess, token := f.checkoutSession(t, shop, account, "main")
			b := &checkoutBrowser{f: f}
			r := b.do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+token+`"}`)
			if r.Status != 200 || b.cookie == "" {
				t.Fatalf("redeem: %d %s", r.Status, r.Body)
			}
			cookie := r.Header.Get("Set-Cookie")
			for _, attr := range []string{"__Host-vitola-checkout=", "Path=/", "HttpOnly", "Secure", "SameSite=None", "Partitioned", "Max-Age="} {
				if !strings.Contains(cookie, attr) {
					t.Fatalf("the action cookie lacks %s: %s", attr, cookie)
				}
			}
			if strings.Contains(cookie, "Domain=") {
				t.Fatalf("a __Host- cookie names a domain: %s", cookie)
			}

			t.Run("the cookie is the session's and its account's alone", func(t *testing.T) {
				if r := b.do(t, "GET", "/api/v1/payment-sessions/current", ""); r.Status != 200 || data(t, r)["id"] != sess["id"] {
					t.Fatalf("current: %d %s", r.Status, r.Body)
				}
				forged := &checkoutBrowser{f: f, cookie: b.cookie[:len(b.cookie)-2] + "xx"}
				none := &checkoutBrowser{f: f}
				for name, other := range map[string]*checkoutBrowser{"forged": forged, "none": none} {
					if r := other.do(t, "GET", "/api/v1/payment-sessions/current", ""); r.Status != 401 {
						t.Fatalf("%s cookie: %d %s", name, r.Status, r.Body)
					}
					if r := other.do(t, "POST", "/api/pci/v1/payment-methods", `{"number": "4242424242424242", "expMonth": 12, "expYear": 2030, "cvc": "123"}`); r.Status != 401 {
						t.Fatalf("%s cookie on the card route: %d %s", name, r.Status, r.Body)
					}
				}
			})

			t.Run("CSRF: another site cannot act with the cookie", func(t *testing.T) {
				for _, h := range [][]string{{"Origin", "https://evil.example"}, {"X-Vitola-Checkout", ""}, {"Origin", ""}} {
					if r := b.do(t, "POST", "/api/v1/payment-sessions/current/cancel", "", h...); r.Status != 403 || r.code() != "cross_site_request" {
						t.Fatalf("cancel with %v: %d %s", h, r.Status, r.Body)
					}
				}
			})

			var visa, declining string
			t.Run("the card route keeps no card data", func(t *testing.T) {
				const pan, cvc = "4242424242424242", "987"
				r := b.do(t, "POST", "/api/pci/v1/payment-methods", `{"number": "4242 4242 4242 4242", "expMonth": 12, "expYear": 2031, "cvc": "`+cvc+`", "name": "A Buyer"}`)
				m := data(t, r)
				if r.Status != 201 || m["brand"] != "visa" || m["last4"] != "4242" || m["isDefault"] != true {
					t.Fatalf("add a card: %d %s", r.Status, r.Body)
				}
				visa = m["id"].(string)
				declining = data(t, b.do(t, "POST", "/api/pci/v1/payment-methods", `{"number": "4000000000009995", "expMonth": 1, "expYear": 2032, "cvc": "555"}`))["id"].(string)
				var responses []restResponse
				for _, body := range []string{
					`{"number": "4242424242424241", "expMonth": 12, "expYear": 2031, "cvc": "987"}`, // Luhn
					`{"number": "4242424242424242", "expMonth": 1, "expYear": 2020, "cvc": "987"}`,  // expired
					`{"number": "378282246310005", "expMonth": 12, "expYear": 2031, "cvc": "987"}`,  // amex wants 4
					`{"number": "4000000000000002", "expMonth": 12, "expYear": 2031, "cvc": "987"}`, // declined when saved
					`{"number": "4242424242424242", "expMonth": 12, "expYear": 2031, "cvc": "987", "pin": "1"}`,
				} {
					r := b.do(t, "POST", "/api/pci/v1/payment-methods", body)
					if r.Status < 400 {
						t.Fatalf("%s: %d %s", body, r.Status, r.Body)
					}
					responses = append(responses, r)
				}
				if responses[3].Status != 402 || responses[3].code() != "card_declined" {
					t.Fatalf("a card declined when saved: %d %s", responses[3].Status, responses[3].Body)
				}
				// Card fields anywhere else are refused.
				for _, path := range []string{"/api/v1/payment-methods"} {
					r := b.do(t, "POST", path, `{"gatewayToken": "tok_visa", "card": {"number": "`+pan+`", "cvc": "`+cvc+`"}}`)
					if r.Status != 400 || r.code() != "card_data_not_accepted" {
						t.Fatalf("card data on %s: %d %s", path, r.Status, r.Body)
					}
					responses = append(responses, r)
				}
				if r := f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "x", "number": "`+pan+`"}`); r.code() != "card_data_not_accepted" {
					t.Fatalf("card data on a trusted route: %d %s", r.Status, r.Body)
				}
				responses = append(responses, r, b.do(t, "GET", "/api/v1/payment-methods", ""), b.do(t, "GET", "/api/v1/payment-sessions/current", ""))
				for _, r := range responses {
					if strings.Contains(string(r.Body), pan) || strings.Contains(string(r.Body), "4242 4242") || strings.Contains(string(r.Body), `"`+cvc+`"`) {
						t.Fatalf("a response shows card data: %s", r.Body)
					}
				}
				for _, secret := range []string{pan, "4242 4242 4242 4242", "4000000000009995", `"` + cvc + `"`, `"555"`} {
					if strings.Contains(f.logs.String(), secret) {
						t.Fatalf("the logs show card data %q", secret)
					}
				}
				for _, secret := range []string{pan, "4000000000009995"} {
					scanStore(t, f.cfg, secret)
				}
			})

			t.Run("saved cards are the account's", func(t *testing.T) {
				var list struct{ Data []map[string]any }
				json.Unmarshal(b.do(t, "GET", "/api/v1/payment-methods", "").Body, &list)
				if len(list.Data) != 2 || list.Data[0]["id"] != visa {
					t.Fatalf("methods, the default first: %v", list.Data)
				}
				if r := b.do(t, "PATCH", "/api/v1/payment-methods/"+declining+"/default", ""); r.Status != 200 || data(t, r)["isDefault"] != true {
					t.Fatalf("make default: %d %s", r.Status, r.Body)
				}
				// Another buyer's browser cannot see or touch these cards.
				otherKey, _, _ := f.p.Keys.CreateKey(ctx, "other buyer", nil)
				otherShop := f.client(t, payments.NewClient{Name: "other", KeyID: otherKey.ID})
				otherAccount := data(t, f.call(t, otherShop, "POST", "/billing-accounts/resolve", `{"accountReference": "`+otherKey.ID+`"}`))["id"].(string)
				_, otherToken := f.checkoutSession(t, otherShop, otherAccount, "other")
				ob := &checkoutBrowser{f: f}
				ob.do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+otherToken+`"}`)
				for _, r := range []restResponse{
					ob.do(t, "PATCH", "/api/v1/payment-methods/"+visa+"/default", ""),
					ob.do(t, "DELETE", "/api/v1/payment-methods/"+visa, ""),
				} {
					if r.Status != 404 || r.code() != "payment_method_not_found" {
						t.Fatalf("another account's card: %d %s", r.Status, r.Body)
					}
				}
				if r := ob.do(t, "POST", "/api/v1/purchase-intents/"+sess["purchase"].(map[string]any)["id"].(string)+"/confirm", `{"paymentMethodId": "`+visa+`"}`, "Idempotency-Key", "x"); r.Status != 404 {
					t.Fatalf("another session's purchase: %d %s", r.Status, r.Body)
				}
			})

			purchase := sess["purchase"].(map[string]any)["id"].(string)
			confirm := func(method, key string) restResponse {
				return b.do(t, "POST", "/api/v1/purchase-intents/"+purchase+"/confirm", `{"paymentMethodId": "`+method+`"}`, "Idempotency-Key", key)
			}
			t.Run("a declined card, then concurrent confirms capture once", func(t *testing.T) {
				before := credits()
				r := confirm(declining, "pay-1")
				if r.Status != 402 || r.code() != "card_declined" || !strings.Contains(string(r.Body), "insufficient_funds") {
					t.Fatalf("declined: %d %s", r.Status, r.Body)
				}
				if again := confirm(declining, "pay-1"); again.Status != 402 || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("the declined attempt replayed: %d %v", again.Status, again.Header)
				}
				var wg sync.WaitGroup
				statuses := make([]int, 6)
				for i := range statuses {
					wg.Go(func() { statuses[i] = confirm(visa, "pay-c-"+string(rune('a'+i))).Status })
				}
				wg.Wait()
				paid := 0
				for _, s := range statuses {
					switch s {
					case 200:
						paid++
					case 409, 401: // being paid by another confirm; or the session completed already
					default:
						t.Fatalf("a concurrent confirm answered %d", s)
					}
				}
				if paid != 1 || credits() != before+100 {
					t.Fatalf("%d confirms paid, credits %d → %d: %v", paid, before, credits(), statuses)
				}
				st := data(t, f.call(t, shop, "GET", "/payment-sessions/"+sess["id"].(string)+"/status", ""))
				if st["state"] != "completed" || st["purchase"].(map[string]any)["state"] != "succeeded" {
					t.Fatalf("status after paying: %v", st)
				}
				// The page polling after paying learns the session completed; it
				// can do nothing more with it.
				if r := b.do(t, "GET", "/api/v1/payment-sessions/current", ""); r.Status != 200 || data(t, r)["state"] != "completed" {
					t.Fatalf("the cookie after the session completed: %d %s", r.Status, r.Body)
				}
				if r := b.do(t, "POST", "/api/v1/payment-sessions/current/cancel", ""); r.Status != 401 {
					t.Fatalf("cancel a completed session: %d", r.Status)
				}
			})

			t.Run("a lost answer is pending, then reconciled with one charge", func(t *testing.T) {
				_, tok := f.checkoutSession(t, shop, account, "timeout")
				tb := &checkoutBrowser{f: f}
				s := data(t, tb.do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+tok+`"}`))
				m := data(t, tb.do(t, "POST", "/api/pci/v1/payment-methods", `{"number": "4000000000000119", "expMonth": 12, "expYear": 2031, "cvc": "123"}`))
				before := credits()
				r := tb.do(t, "POST", "/api/v1/purchase-intents/"+s["purchase"].(map[string]any)["id"].(string)+"/confirm", `{"paymentMethodId": "`+m["id"].(string)+`"}`, "Idempotency-Key", "t-1")
				if r.Status != 202 || data(t, r)["purchase"].(map[string]any)["state"] != "pending" || credits() != before {
					t.Fatalf("a lost answer: %d %s", r.Status, r.Body)
				}
				// The reconciler asks again after its delay (the test runs the worker as if it had come).
				f.p.PaymentsService.Now = func() time.Time { return time.Now().Add(time.Minute) }
				defer func() { f.p.PaymentsService.Now = nil }()
				deadline := time.Now().Add(10 * time.Second)
				for credits() == before && time.Now().Before(deadline) {
					if _, err := f.p.PaymentsService.RunWorker(ctx); err != nil {
						t.Fatal(err)
					}
					time.Sleep(50 * time.Millisecond)
				}
				st := data(t, f.call(t, shop, "GET", "/payment-sessions/"+s["id"].(string)+"/status", ""))
				if credits() != before+100 || st["purchase"].(map[string]any)["state"] != "succeeded" {
					t.Fatalf("reconciled: credits %d → %d, %v", before, credits(), st)
				}
			})

			t.Run("cancel", func(t *testing.T) {
				s, tok := f.checkoutSession(t, shop, account, "cancel")
				cb := &checkoutBrowser{f: f}
				cb.do(t, "POST", "/api/v1/payment-sessions/redeem", `{"token": "`+tok+`"}`)
				r := cb.do(t, "POST", "/api/v1/payment-sessions/current/cancel", "")
				if r.Status != 200 || data(t, r)["state"] != "cancelled" || !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
					t.Fatalf("cancel: %d %s %s", r.Status, r.Body, r.Header.Get("Set-Cookie"))
				}
				if r := cb.do(t, "GET", "/api/v1/payment-sessions/current", ""); r.Status != 401 {
					t.Fatalf("a cancelled session's cookie: %d", r.Status)
				}
				st := data(t, f.call(t, shop, "GET", "/payment-sessions/"+s["id"].(string)+"/status", ""))
				if st["state"] != "cancelled" || st["purchase"].(map[string]any)["state"] != "cancelled" {
					t.Fatalf("status after cancel: %v", st)
				}
			})
		})
	}
}
