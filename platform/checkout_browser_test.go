package platform_test

import (
	"context"
	"encoding/json"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/sdk/sdktest"
	"github.com/vitolahq/vitola/subgraphs/payments"
	paymentssql "github.com/vitolahq/vitola/subgraphs/payments/sqlstore"
)

// A buyer pays in Debian's chromium (sdk/test/browser/checkout.mjs) on the
// hosted checkout page that a trusted backend's session links to: at the top
// level with the keyboard alone, inside an iframe of the client's registered
// origin (third-party cookies blocked: the Partitioned cookie alone carries
// the session), through declines on a phone, from an expired and a used link,
// cancelled, with the gateway's answer lost (processing), and framed by an
// origin the client did not register. The trusted status route and the
// account's credits say how each one ended.
// Screenshots of every state go to VITOLA_ARTIFACTS (if set) or the test's
// temp dir; the test logs their paths.
func TestCheckoutInChromium(t *testing.T) {
	sdktest.Require(t, "chromium")
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			cases := []string{"top", "frame", "declined", "pending", "expired", "used", "cancelled", "stranger"}
			if backend == sqldb.Postgres {
				cases = []string{"top", "frame", "declined"} // every storage path the browser reaches
			}
			checkoutInChromium(t, cfg, cases)
		})
	}
}

// caseFacts is what checkout.mjs saw in one case.
type caseFacts struct {
	Error string
	MS    int

	HashAfterLoad, Offer, Quantity, Price, FocusAfterLoad, AfterReload, LinkAgainSameBrowser string
	SavedCard, Status, PayFocusOutline, PayLabel, Done, LandedOn                             string
	FieldsClearedAfterPost                                                                   bool

	View, FrameLandedOn, TopStayedOn string

	Layout struct {
		ScrollWidth, InnerWidth int
		SmallestInputFont       float64
	}
	SaveDeclined, BadExpiry, BadExpiryInvalid, ChargeDeclined, Selected string
	FieldsClearedAfterDecline                                           bool
	CardsAfterSaveDecline                                               int
	Cards, CardsAfterRemove                                             []string

	Text, Focus, Hash string

	Console, FrameURL string
	CheckoutElements  int
}

func checkoutInChromium(t *testing.T, cfg sqldb.Config, cases []string) {
	ctx := context.Background()
	// The payments origin on a real loopback server, as http://localhost:
	// browsers treat localhost as a secure context, so the Secure __Host-
	// cookie works over plain http there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	payOrigin := "http://localhost:" + portOf(ln.Addr())
	f := openPaymentsOn(t, cfg, ln, payOrigin)
	shop := httptest.NewServer(shopPages("Cigar shop"))          // registered: http://127.0.0.1:PORT
	stranger := httptest.NewServer(shopPages("Stranger's page")) // another port: not registered
	t.Cleanup(shop.Close)
	t.Cleanup(stranger.Close)

	c := f.client(t, payments.NewClient{ReturnURLs: []string{shop.URL + "/paid", shop.URL + "/cancelled"}, Origins: []string{shop.URL}})
	offers, err := f.p.PaymentsService.Store.ActiveOffers(ctx, "", payments.AICredits)
	if err != nil {
		t.Fatal(err)
	}
	var offer *payments.Offer
	for i := range offers {
		if offers[i].Quantity == 100 {
			offer = &offers[i]
		}
	}
	if offer == nil {
		t.Fatal("no demo offer of 100 credits")
	}

	type session struct {
		ID, Account, URL, ReturnURL, CancelURL string
	}
	sessions := map[string]session{}
	plan := map[string]any{}
	for _, name := range cases {
		acc := data(t, f.call(t, c, "POST", "/billing-accounts/resolve", `{"accountReference": "buyer-`+name+`"}`))["id"].(string)
		s := session{Account: acc, ReturnURL: shop.URL + "/paid?order=" + name, CancelURL: shop.URL + "/cancelled?order=" + name}
		body, _ := json.Marshal(map[string]any{"billingAccountId": acc, "offerId": offer.ID, "returnUrl": s.ReturnURL, "cancelUrl": s.CancelURL, "parentOrigin": shop.URL})
		r := f.call(t, c, "POST", "/payment-sessions", string(body), "Idempotency-Key", "checkout-"+name)
		d := data(t, r)
		s.ID, s.URL = d["id"].(string), d["url"].(string)
		if r.Status != 201 || !strings.HasPrefix(s.URL, payOrigin+"/checkout/"+s.ID+"#token=") {
			t.Fatalf("session %s: %d %s", name, r.Status, r.Body)
		}
		switch name {
		case "expired": // its 30 minutes are over
			db := f.p.PaymentsService.Store.(*paymentssql.Store).DB()
			if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE payment_sessions SET expires_at = ? WHERE id = ?`), time.Now().Add(-time.Second).UnixMilli(), s.ID); err != nil {
				t.Fatal(err)
			}
		case "used": // another browser redeemed the link first
			token := s.URL[strings.Index(s.URL, "#token=")+len("#token="):]
			if r := f.call(t, client{}, "POST", "/payment-sessions/redeem", `{"token": "`+token+`"}`, "Origin", payOrigin, "X-Vitola-Checkout", "1"); r.Status != 200 {
				t.Fatalf("redeem: %d %s", r.Status, r.Body)
			}
		}
		sessions[name] = s
		plan[name] = map[string]string{"url": s.URL, "returnUrl": s.ReturnURL, "cancelUrl": s.CancelURL}
	}

	// The page as the shim serves it (and a quick stop before the browser
	// when it is missing): framed only by the client's registered origin.
	res, err := http.Get(payOrigin + "/checkout/" + sessions[cases[0]].ID)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); res.StatusCode != 200 || !strings.HasSuffix(csp, "; frame-ancestors "+shop.URL) ||
		!strings.Contains(csp, "script-src 'self';") || res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("GET /checkout/{id}: %d %q", res.StatusCode, res.Header)
	}

	artifacts := t.TempDir()
	if dir := os.Getenv("VITOLA_ARTIFACTS"); dir != "" {
		artifacts = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-"))
		if err := os.MkdirAll(artifacts, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	planJSON, _ := json.Marshal(map[string]any{"artifacts": artifacts, "shop": shop.URL, "stranger": stranger.URL, "cases": plan})
	var seen struct {
		Cases       map[string]caseFacts
		Screenshots []string
		PageErrors  []string
	}
	started := time.Now()
	sdktest.RunBrowser(t, "checkout.mjs", []string{"CHECKOUT_PLAN=" + string(planJSON)}, &seen)
	t.Logf("chromium ran %d cases in %s; screenshots:\n  %s", len(cases), time.Since(started).Round(time.Millisecond), strings.Join(seen.Screenshots, "\n  "))
	if len(seen.PageErrors) > 0 {
		t.Errorf("the page's script failed: %q", seen.PageErrors)
	}

	// status is the trusted status route's session and purchase states.
	status := func(name string) (string, string) {
		d := data(t, f.call(t, c, "GET", "/payment-sessions/"+sessions[name].ID+"/status", ""))
		return d["state"].(string), d["purchase"].(map[string]any)["state"].(string)
	}
	credits := func(name string) float64 {
		d := data(t, f.call(t, c, "POST", "/billing-accounts/resolve", `{"accountReference": "buyer-`+name+`"}`))
		return d["balances"].([]any)[0].(map[string]any)["available"].(float64)
	}
	paid := func(name string) {
		t.Helper()
		if s, p := status(name); s != "completed" || p != "succeeded" {
			t.Errorf("%s: the status route says %s / %s, want completed / succeeded", name, s, p)
		}
		if got := credits(name); got != float64(offer.Quantity) {
			t.Errorf("%s: the account holds %v credits, want %d", name, got, offer.Quantity)
		}
	}
	for _, name := range cases {
		got := seen.Cases[name]
		t.Logf("%s: %d ms", name, got.MS)
		if got.Error != "" {
			t.Errorf("%s: the browser failed: %s", name, got.Error)
			continue
		}
		switch name {
		case "top":
			if got.HashAfterLoad != "" {
				t.Errorf("the token stayed in the address: %q", got.HashAfterLoad)
			}
			if got.Offer != offer.Name || got.Quantity != "100 AI credits" || got.Price != "$5.00" || got.PayLabel != "Pay $5.00" {
				t.Errorf("the order shows %q, %q, %q, %q", got.Offer, got.Quantity, got.Price, got.PayLabel)
			}
			if got.AfterReload != offer.Name || got.LinkAgainSameBrowser != offer.Name {
				t.Errorf("after a reload %q; the link again in the same browser %q", got.AfterReload, got.LinkAgainSameBrowser)
			}
			if got.FocusAfterLoad != "title" {
				t.Errorf("focus after load on %q, want the heading", got.FocusAfterLoad)
			}
			if !strings.HasPrefix(got.SavedCard, "Visa ending in 4242") || !strings.Contains(got.SavedCard, "12/2034") || !strings.Contains(got.Status, "was saved") {
				t.Errorf("the saved card shows %q, the status %q", got.SavedCard, got.Status)
			}
			if !got.FieldsClearedAfterPost {
				t.Error("the card number or CVC stayed in the form after it was sent")
			}
			if !strings.HasPrefix(got.PayFocusOutline, "solid") || strings.HasPrefix(got.PayFocusOutline, "solid 0") {
				t.Errorf("the focused Pay button's outline: %q", got.PayFocusOutline)
			}
			if !strings.Contains(got.Done, "Payment received") || got.LandedOn != sessions[name].ReturnURL {
				t.Errorf("done %q, then on %q", got.Done, got.LandedOn)
			}
			paid(name)
		case "frame":
			if got.View != "checkout" {
				t.Errorf("the frame shows the %q view: the Partitioned cookie did not carry the session", got.View)
				continue
			}
			if got.Offer != offer.Name || !strings.HasPrefix(got.SavedCard, "Mastercard ending in 4444") {
				t.Errorf("in the frame: %q, %q", got.Offer, got.SavedCard)
			}
			if got.FrameLandedOn != sessions[name].ReturnURL || !strings.HasPrefix(got.TopStayedOn, shop.URL+"/frame?") {
				t.Errorf("the frame went to %q and the page to %q: want the frame on the return URL", got.FrameLandedOn, got.TopStayedOn)
			}
			paid(name)
		case "declined":
			if got.Layout.ScrollWidth > got.Layout.InnerWidth || got.Layout.SmallestInputFont < 16 {
				t.Errorf("on a phone: %+v", got.Layout)
			}
			if !strings.Contains(got.SaveDeclined, "declined") || !got.FieldsClearedAfterDecline || got.CardsAfterSaveDecline != 0 {
				t.Errorf("a card declined when saved: %q, cleared %v, %d cards", got.SaveDeclined, got.FieldsClearedAfterDecline, got.CardsAfterSaveDecline)
			}
			if !strings.Contains(got.BadExpiry, "expiry") || got.BadExpiryInvalid != "true" {
				t.Errorf("a wrong expiry: %q, aria-invalid %q", got.BadExpiry, got.BadExpiryInvalid)
			}
			if !strings.Contains(got.ChargeDeclined, "insufficient funds") || !strings.Contains(got.ChargeDeclined, "another card") {
				t.Errorf("a card declined at pay: %q", got.ChargeDeclined)
			}
			if len(got.Cards) != 2 || len(got.CardsAfterRemove) != 1 || !strings.HasPrefix(got.CardsAfterRemove[0], "Visa ending in 4242 Default") ||
				!strings.HasPrefix(got.Selected, "Visa ending in 4242") {
				t.Errorf("cards %q, after making 4242 the default and removing 9995 %q, selected %q", got.Cards, got.CardsAfterRemove, got.Selected)
			}
			if got.LandedOn != sessions[name].ReturnURL {
				t.Errorf("after paying with another card: on %q", got.LandedOn)
			}
			paid(name)
		case "pending":
			if !strings.Contains(got.Text, "Processing your payment") || !strings.Contains(got.Status, "Processing") {
				t.Errorf("a lost gateway answer: %q (status %q)", got.Text, got.Status)
			}
			if s, p := status(name); s != "active" || p != "pending" {
				t.Errorf("a lost gateway answer: the status route says %s / %s, want active / pending", s, p)
			}
		case "expired", "used":
			if !strings.Contains(got.Text, "can’t be used") || !strings.Contains(got.Focus, "can’t be used") || got.Hash != "" {
				t.Errorf("%s link: %q (focus %q, hash %q)", name, got.Text, got.Focus, got.Hash)
			}
			want := map[string]string{"expired": "expired", "used": "active"}[name]
			if s, _ := status(name); s != want {
				t.Errorf("%s link: the session is %s, want %s", name, s, want)
			}
		case "cancelled":
			if got.LandedOn != sessions[name].CancelURL {
				t.Errorf("cancelled, then on %q", got.LandedOn)
			}
			if s, p := status(name); s != "cancelled" || p != "cancelled" {
				t.Errorf("the status route says %s / %s, want cancelled / cancelled", s, p)
			}
		case "stranger":
			if !strings.Contains(got.Console, "frame-ancestors "+shop.URL) || got.CheckoutElements > 0 {
				t.Errorf("framed by a stranger: console %q, frame %q, %d checkout elements", got.Console, got.FrameURL, got.CheckoutElements)
			}
			// The page never ran: the token was not redeemed.
			if s, _ := status(name); s != "open" {
				t.Errorf("framed by a stranger: the session is %s, want open (never redeemed)", s)
			}
		}
	}
}

func portOf(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return port
}

// shopPages is a client's website: /frame?src=URL embeds a checkout link,
// /paid and /cancelled are where the checkout returns.
func shopPages(name string) http.Handler {
	page := template.Must(template.New("shop").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body style="font-family: sans-serif; margin: 1rem">
<h1>{{.Title}}</h1>
{{if .Src}}<iframe src="{{.Src}}" title="Checkout" style="width: 100%; height: 1100px; border: 2px dashed #888"></iframe>{{end}}
</body></html>`))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := struct{ Title, Src string }{Src: r.URL.Query().Get("src")}
		switch r.URL.Path {
		case "/frame":
			v.Title = name + " embeds the checkout"
		case "/paid":
			v.Title = name + ": thank you for your order " + r.URL.Query().Get("order")
		case "/cancelled":
			v.Title = name + ": order " + r.URL.Query().Get("order") + " cancelled"
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.Execute(w, v)
	})
}
