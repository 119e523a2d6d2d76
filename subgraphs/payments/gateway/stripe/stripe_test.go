package stripe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/stripe"
	"github.com/vitolahq/vitola/subgraphs/payments/gateway/stripe/stripemock"
)

const (
	cardNumber = "5555555555554444"
	cardCVC    = "737"
	testKey    = "sk_test_merchantOne"
)

var creds = []byte(`{"secretKey": "` + testKey + `"}`)

func testCard() payments.Card {
	return payments.Card{Number: "5555 5555 5555 4444", ExpMonth: 12, ExpYear: time.Now().Year() + 3, CVC: cardCVC, Name: "Ada Lovelace"}
}

// request is what the gateway sent, as the transport saw it.
type request struct {
	Method, Path, Auth, IdempotencyKey string
	Form                               url.Values
}

// recorder is an http.RoundTripper that keeps every request.
type recorder struct {
	mu   sync.Mutex
	reqs []request
	next http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	form, _ := url.ParseQuery(string(body))
	r.mu.Lock()
	r.reqs = append(r.reqs, request{Method: req.Method, Path: req.URL.Path, Auth: req.Header.Get("Authorization"),
		IdempotencyKey: req.Header.Get("Idempotency-Key"), Form: form})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

// harness is a gateway whose requests are kept, and whose calls' output to
// the process's standard output and error is too.
type harness struct {
	g   *stripe.Gateway
	rec *recorder
	mu  sync.Mutex
	out strings.Builder
}

func newHarness(t *testing.T, apiURL string, o stripe.Options) *harness {
	t.Helper()
	h := &harness{rec: &recorder{next: http.DefaultTransport}}
	o.APIURL = apiURL
	o.HTTPClient = &http.Client{Transport: h.rec}
	g, err := stripe.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	return h
}

// capture runs fn with standard output and error going to the harness.
func (h *harness) capture(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	stdout, stderr := os.Stdout, os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	read := make(chan struct{})
	go func() {
		io.Copy(&h.out, r)
		close(read)
	}()
	os.Stdout, os.Stderr = w, w
	defer func() {
		os.Stdout, os.Stderr = stdout, stderr
		w.Close()
		<-read
		r.Close()
	}()
	fn()
}

func (h *harness) Vault(ctx context.Context, creds []byte, c payments.Card) (v payments.VaultedCard, err error) {
	h.capture(func() { v, err = h.g.Vault(ctx, creds, c) })
	return v, err
}

func (h *harness) Charge(ctx context.Context, creds []byte, req payments.ChargeRequest) (ch payments.Charge, err error) {
	h.capture(func() { ch, err = h.g.Charge(ctx, creds, req) })
	return ch, err
}

// noCardData fails when the card's number (whole or as typed) or CVC shows
// in an error or in what the calls printed; the client's own logger would
// print Stripe's error messages.
func (h *harness) noCardData(t *testing.T, err error) {
	t.Helper()
	h.mu.Lock()
	texts := map[string]string{"output": h.out.String()}
	h.mu.Unlock()
	if texts["output"] != "" {
		t.Errorf("the gateway printed: %s", texts["output"])
	}
	if err != nil {
		texts["error"] = err.Error()
		texts["error %#v"] = fmt.Sprintf("%#v", err)
	}
	for what, s := range texts {
		for _, secret := range []string{cardNumber, "5555 5555 5555 4444", cardCVC} {
			if strings.Contains(s, secret) {
				t.Errorf("the %s holds the card's number or CVC: %s", what, s)
			}
		}
	}
}

func TestCheckCredentials(t *testing.T) {
	g, err := stripe.New(stripe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, creds string
		ok          bool
	}{
		{"secret test key", `{"secretKey": "sk_test_51Habc"}`, true},
		{"secret live key", `{"secretKey": "sk_live_51Habc"}`, true},
		{"restricted test key", `{"secretKey": "rk_test_51Habc"}`, true},
		{"restricted live key", `{"secretKey": "rk_live_51Habc"}`, true},
		{"publishable key", `{"secretKey": "pk_live_51Hsecretvalue"}`, false},
		{"prefix only", `{"secretKey": "sk_live_"}`, false},
		{"inner space", `{"secretKey": "sk_live_51H secretvalue"}`, false},
		{"another field", `{"apiKey": "sk_live_51Hsecretvalue"}`, false},
		{"not a string", `{"secretKey": 51}`, false},
		{"not an object", `"sk_live_51Hsecretvalue"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := g.CheckCredentials([]byte(tc.creds))
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), "secretKey") {
				t.Errorf("the error does not name the field: %v", err)
			}
			if strings.Contains(err.Error(), "secretvalue") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

// stripe-mock validates each request against Stripe's OpenAPI document
// (unknown or ill-typed parameters are a 400), so a vault that works there
// calls the API right; the IDs, brand and last four come from its fixtures.
func TestVaultOnStripeMock(t *testing.T) {
	h := newHarness(t, stripemock.Start(t), stripe.Options{Retries: -1})
	v, err := h.Vault(context.Background(), creds, testCard())
	h.noCardData(t, err)
	if err != nil {
		t.Fatalf("vault: %v", err)
	}
	if !regexp.MustCompile(`^cus_\w+/pm_\w+$`).MatchString(v.Reference) {
		t.Errorf("reference %q is not cus_…/pm_…", v.Reference)
	}
	// The fixture's card is a Visa ending 4242 (the card sent ends 4444):
	// what is shown is Stripe's reading; stripe-mock echoes the expiry sent.
	if v.Brand != "visa" || v.Last4 != "4242" || v.ExpMonth != 12 || v.ExpYear != testCard().ExpYear {
		t.Errorf("vaulted card = %+v, want Stripe's answer: visa 4242 12/%d", v, testCard().ExpYear)
	}

	reqs := h.rec.requests()
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.Method+" "+r.Path)
		if r.Auth != "Bearer "+testKey {
			t.Errorf("%s %s: Authorization %q, want the merchant account's key", r.Method, r.Path, r.Auth)
		}
	}
	if want := "POST /v1/payment_methods,POST /v1/customers,POST /v1/setup_intents"; strings.Join(paths, ",") != want {
		t.Fatalf("requests %v, want %s", paths, want)
	}
	pm, cus, si := reqs[0].Form, reqs[1].Form, reqs[2].Form
	if pm.Get("type") != "card" || pm.Get("card[number]") != cardNumber || pm.Get("card[cvc]") != cardCVC ||
		pm.Get("card[exp_month]") != "12" || pm.Get("billing_details[name]") != "Ada Lovelace" {
		t.Errorf("payment method request: %v", redactForm(pm))
	}
	if cus.Get("name") != "Ada Lovelace" {
		t.Errorf("customer request: %v", cus)
	}
	if !strings.HasPrefix(si.Get("customer"), "cus_") || !strings.HasPrefix(si.Get("payment_method"), "pm_") ||
		si.Get("confirm") != "true" || si.Get("usage") != "off_session" || si.Get("payment_method_types[0]") != "card" {
		t.Errorf("setup intent request: %v", si)
	}
	if stripego.Key != "" {
		t.Error("the package-wide stripe.Key was set")
	}
}

// redactForm is a request's form fit for a test's failure message.
func redactForm(f url.Values) url.Values {
	c := url.Values{}
	for k, v := range f {
		c[k] = v
	}
	c.Del("card[number]")
	c.Del("card[cvc]")
	return c
}

func TestChargeOnStripeMock(t *testing.T) {
	h := newHarness(t, stripemock.Start(t), stripe.Options{Retries: -1})
	ctx := context.Background()
	req := payments.ChargeRequest{Reference: "cus_QXg1o8vcGmoR32/pm_1Pgc75B7WZ01zgkWlHVgdEGJ", Amount: 1250, Currency: "EUR",
		Key: "pur_0001:attempt-1", Description: "500 ai_credits"}
	ch, err := h.Charge(ctx, creds, req)
	if err != nil {
		t.Fatalf("charge: %v", err)
	}
	if !strings.HasPrefix(ch.ID, "pi_") {
		t.Errorf("charge ID %q, want a PaymentIntent's pi_…", ch.ID)
	}
	// The reconciler asks again with the same key: Stripe answers the first
	// outcome for that Idempotency-Key (stripe-mock only shows it was sent).
	if _, err := h.Charge(ctx, creds, req); err != nil {
		t.Fatalf("second charge: %v", err)
	}
	// Another merchant account's call carries its own key.
	other := []byte(`{"secretKey": "rk_test_merchantTwo"}`)
	if _, err := h.Charge(ctx, other, payments.ChargeRequest{Reference: req.Reference, Amount: 100, Currency: "usd", Key: "k2"}); err != nil {
		t.Fatalf("charge with a restricted key: %v", err)
	}

	reqs := h.rec.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs[:2] {
		f := r.Form
		if r.Method != http.MethodPost || r.Path != "/v1/payment_intents" || r.IdempotencyKey != req.Key || r.Auth != "Bearer "+testKey {
			t.Errorf("request %d: %s %s Idempotency-Key %q Authorization %q", i, r.Method, r.Path, r.IdempotencyKey, r.Auth)
		}
		if f.Get("amount") != "1250" || f.Get("currency") != "eur" || f.Get("customer") != "cus_QXg1o8vcGmoR32" ||
			f.Get("payment_method") != "pm_1Pgc75B7WZ01zgkWlHVgdEGJ" || f.Get("confirm") != "true" || f.Get("off_session") != "true" ||
			f.Get("metadata[vitola_charge_key]") != req.Key || f.Get("description") != "500 ai_credits" {
			t.Errorf("request %d form: %v", i, f)
		}
	}
	if reqs[2].Auth != "Bearer rk_test_merchantTwo" || reqs[2].IdempotencyKey != "k2" {
		t.Errorf("second merchant's request: Authorization %q, Idempotency-Key %q", reqs[2].Auth, reqs[2].IdempotencyKey)
	}
}

// stripeError is Stripe's error body.
func stripeError(typ, code, declineCode, message string) string {
	return fmt.Sprintf(`{"error": {"type": %q, "code": %q, "decline_code": %q, "message": %q, "request_log_url": "https://dashboard.stripe.com/logs/req_x"}}`,
		typ, code, declineCode, message)
}

// fakeStripe answers the vault's first two steps and the given answer on
// the path that fails.
func fakeStripe(t *testing.T, failPath string, status int, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == failPath {
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		switch r.URL.Path {
		case "/v1/payment_methods":
			io.WriteString(w, `{"id": "pm_fake", "object": "payment_method", "card": {"brand": "mastercard", "last4": "4444", "exp_month": 12, "exp_year": 2031}}`)
		case "/v1/customers":
			io.WriteString(w, `{"id": "cus_fake", "object": "customer"}`)
		case "/v1/setup_intents":
			io.WriteString(w, `{"id": "seti_fake", "object": "setup_intent", "status": "succeeded"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, stripeError("invalid_request_error", "", "", "Unrecognized request URL"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func wantDeclined(t *testing.T, err error, code string) {
	t.Helper()
	var d *payments.Declined
	if !errors.As(err, &d) {
		t.Fatalf("error %v, want a decline %s", err, code)
	}
	if d.Code != code || d.Message == "" {
		t.Fatalf("declined %q (%q), want %s", d.Code, d.Message, code)
	}
	if errors.Is(err, payments.ErrOutcomeUnknown) {
		t.Fatal("a decline is also an unknown outcome")
	}
}

// stripe-mock cannot decline a card: a fake Stripe answers the errors.
func TestVaultDeclinesFake(t *testing.T) {
	echo := "Your card " + cardNumber + " with CVC " + cardCVC + " was declined." // a Stripe that quoted the card
	for _, tc := range []struct {
		name, path, body string
		status           int
		code             string // "" for a plain error
	}{
		{"card declined", "/v1/payment_methods", stripeError("card_error", "card_declined", "generic_decline", echo), 402, "card_declined"},
		{"insufficient funds", "/v1/setup_intents", stripeError("card_error", "card_declined", "insufficient_funds", echo), 402, "insufficient_funds"},
		{"expired card", "/v1/payment_methods", stripeError("card_error", "expired_card", "", echo), 402, "expired_card"},
		{"incorrect cvc", "/v1/setup_intents", stripeError("card_error", "incorrect_cvc", "", echo), 402, "incorrect_cvc"},
		{"processing error", "/v1/setup_intents", stripeError("card_error", "processing_error", "", echo), 402, "processing_error"},
		{"incorrect number", "/v1/payment_methods", stripeError("card_error", "incorrect_number", "", echo), 402, "card_declined"},
		{"unknown decline code", "/v1/setup_intents", stripeError("card_error", "card_declined", "some_future_code", echo), 402, "card_declined"},
		{"3-D Secure at setup", "/v1/setup_intents", `{"id": "seti_fake", "object": "setup_intent", "status": "requires_action"}`, 200, "authentication_required"},
		{"setup failed", "/v1/setup_intents", `{"id": "seti_fake", "object": "setup_intent", "status": "requires_payment_method", "last_setup_error": {"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}}`, 200, "insufficient_funds"},
		{"raw card data not enabled", "/v1/payment_methods", stripeError("invalid_request_error", "", "", "Sending credit card numbers directly to the Stripe API is generally unsafe. "+echo), 400, ""},
		{"key refused", "/v1/payment_methods", stripeError("invalid_request_error", "", "", "Invalid API Key provided: sk_test_****One"), 401, ""},
		{"server error", "/v1/customers", stripeError("api_error", "", "", echo), 500, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeStripe(t, tc.path, tc.status, tc.body), stripe.Options{Retries: -1})
			_, err := h.Vault(context.Background(), creds, testCard())
			h.noCardData(t, err)
			if err == nil {
				t.Fatal("vaulted")
			}
			if tc.code != "" {
				wantDeclined(t, err, tc.code)
				return
			}
			var d *payments.Declined
			if errors.As(err, &d) {
				t.Fatalf("a failure that is not the card's is a decline: %v", err)
			}
		})
	}
}

func TestVaultChecksTheCardBeforeStripeFake(t *testing.T) {
	h := newHarness(t, fakeStripe(t, "", 0, ""), stripe.Options{Retries: -1})
	c := testCard()
	c.Number = "5555555555554445" // fails the Luhn check
	_, err := h.Vault(context.Background(), creds, c)
	wantDeclined(t, err, "invalid_card")
	if n := len(h.rec.requests()); n != 0 {
		t.Errorf("%d requests to Stripe for a card that fails the checks", n)
	}
	h.noCardData(t, err)
}

func TestVaultOnFakeStripe(t *testing.T) {
	h := newHarness(t, fakeStripe(t, "", 0, ""), stripe.Options{Retries: -1})
	v, err := h.Vault(context.Background(), creds, testCard())
	if err != nil {
		t.Fatal(err)
	}
	if want := (payments.VaultedCard{Reference: "cus_fake/pm_fake", Brand: "mastercard", Last4: "4444", ExpMonth: 12, ExpYear: 2031}); v != want {
		t.Errorf("vaulted %+v, want %+v", v, want)
	}
}

// chargeStub answers every request with one status and body.
func chargeStub(t *testing.T, status int, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var chargeReq = payments.ChargeRequest{Reference: "cus_fake/pm_fake", Amount: 500, Currency: "USD", Key: "pur_1:attempt-1"}

func TestChargeOutcomesFake(t *testing.T) {
	const unknown = "unknown"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string // a decline code, unknown, or "" for success
	}{
		{"succeeded", 200, `{"id": "pi_fake", "object": "payment_intent", "status": "succeeded"}`, ""},
		{"card declined", 402, stripeError("card_error", "card_declined", "do_not_honor", "Your card was declined."), "card_declined"},
		{"insufficient funds", 402, stripeError("card_error", "card_declined", "insufficient_funds", "Your card has insufficient funds."), "insufficient_funds"},
		{"expired card", 402, stripeError("card_error", "expired_card", "", "Your card has expired."), "expired_card"},
		{"3-D Secure off session", 402, stripeError("card_error", "authentication_required", "authentication_required", "This payment required an authentication action to complete."), "authentication_required"},
		{"requires action", 200, `{"id": "pi_fake", "object": "payment_intent", "status": "requires_action"}`, "authentication_required"},
		{"requires payment method", 200, `{"id": "pi_fake", "object": "payment_intent", "status": "requires_payment_method", "last_payment_error": {"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}}`, "insufficient_funds"},
		{"processing", 200, `{"id": "pi_fake", "object": "payment_intent", "status": "processing"}`, unknown},
		{"server error", 500, stripeError("api_error", "", "", "An unknown error occurred"), unknown},
		{"unavailable", 503, `<html>upstream unavailable</html>`, unknown},
		{"rate limited", 429, stripeError("invalid_request_error", "rate_limit", "", "Too many requests"), unknown},
		{"key in flight", 409, stripeError("idempotency_error", "", "", "There is currently another in-progress request using this Stripe-Idempotency-Key"), unknown},
		{"key reused with other parameters", 400, stripeError("idempotency_error", "", "", "Keys for idempotent requests can only be used with the same parameters they were first used with."), unknown},
		{"key refused", 401, stripeError("invalid_request_error", "", "", "Invalid API Key provided"), "merchant_not_ready"},
		{"customer gone", 404, stripeError("invalid_request_error", "resource_missing", "", "No such customer: 'cus_fake'"), "card_declined"},
		{"request refused", 400, stripeError("invalid_request_error", "parameter_invalid_integer", "", "Invalid integer"), "processing_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, chargeStub(t, tc.status, tc.body), stripe.Options{Retries: -1})
			ch, err := h.Charge(context.Background(), creds, chargeReq)
			switch tc.want {
			case "":
				if err != nil || ch.ID != "pi_fake" {
					t.Fatalf("charge %+v, %v; want pi_fake", ch, err)
				}
			case unknown:
				if !errors.Is(err, payments.ErrOutcomeUnknown) {
					t.Fatalf("error %v, want the outcome unknown", err)
				}
				var d *payments.Declined
				if errors.As(err, &d) {
					t.Fatal("an unknown outcome is also a decline")
				}
			default:
				wantDeclined(t, err, tc.want)
			}
		})
	}
}

func TestChargeMalformedReferenceFake(t *testing.T) {
	h := newHarness(t, chargeStub(t, 200, `{"id": "pi_fake", "status": "succeeded"}`), stripe.Options{Retries: -1})
	for _, ref := range []string{"", "cus_1", "pm_1/cus_1", "cus_1/pm_1/x", "sbx_card_1"} {
		r := chargeReq
		r.Reference = ref
		_, err := h.Charge(context.Background(), creds, r)
		wantDeclined(t, err, "card_declined")
	}
	if n := len(h.rec.requests()); n != 0 {
		t.Errorf("%d requests for references that are not Stripe's", n)
	}
}

func TestChargeTimeoutFake(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The charge may have gone through; the answer never comes. (Read
		// the body first: then the server notices the client leave.)
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	h := newHarness(t, srv.URL, stripe.Options{Timeout: 300 * time.Millisecond, Retries: -1})
	start := time.Now()
	_, err := h.Charge(context.Background(), creds, chargeReq)
	if !errors.Is(err, payments.ErrOutcomeUnknown) {
		t.Fatalf("error %v, want the outcome unknown", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the charge took %s with a 300ms timeout", d)
	}
	if host := strings.TrimPrefix(srv.URL, "http://"); strings.Contains(err.Error(), host) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("the error names the host: %v", err)
	}
}

func TestChargeUnreachableFake(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	h := newHarness(t, "http://"+addr, stripe.Options{Retries: -1})
	_, err = h.Charge(context.Background(), creds, chargeReq)
	if !errors.Is(err, payments.ErrOutcomeUnknown) {
		t.Fatalf("error %v, want the outcome unknown", err)
	}
	if strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("the error names the host: %v", err)
	}
}

// The client's own retry of a request that got no answer keeps the charge's
// key, so Stripe cannot charge twice.
func TestChargeRetryKeepsTheKeyFake(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 { // the answer is lost on the way
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": "pi_fake", "object": "payment_intent", "status": "succeeded"}`)
	}))
	defer srv.Close()
	h := newHarness(t, srv.URL, stripe.Options{Retries: 1})
	ch, err := h.Charge(context.Background(), creds, chargeReq)
	if err != nil || ch.ID != "pi_fake" {
		t.Fatalf("charge %+v, %v", ch, err)
	}
	reqs := h.rec.requests()
	if len(reqs) != 2 || reqs[0].IdempotencyKey != chargeReq.Key || reqs[1].IdempotencyKey != chargeReq.Key {
		t.Fatalf("requests %+v, want two with Idempotency-Key %s", reqs, chargeReq.Key)
	}
}

func TestAPIURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"", true},
		{"https://api.stripe.com", true},
		{"https://stripe-proxy.internal:8443/", true},
		{"http://127.0.0.1:12111", true},
		{"http://[::1]:12111", true},
		{"http://localhost:12111/v1", true},
		{"http://stripe-mock:12111", false},
		{"http://10.0.0.5:12111", false},
		{"ftp://api.stripe.com", false},
		{"api.stripe.com", false},
		{"https://user:pass@api.stripe.com", false},
	} {
		_, err := stripe.New(stripe.Options{APIURL: tc.url})
		if (err == nil) != tc.ok {
			t.Errorf("New(APIURL %q): %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}

func TestCallsWithBadCredentials(t *testing.T) {
	h := newHarness(t, chargeStub(t, 200, `{}`), stripe.Options{Retries: -1})
	bad := []byte(`{"secretKey": "pk_test_visible"}`)
	if _, err := h.Vault(context.Background(), bad, testCard()); err == nil || strings.Contains(err.Error(), "visible") {
		t.Errorf("vault with a publishable key: %v", err)
	}
	if _, err := h.Charge(context.Background(), bad, chargeReq); err == nil || strings.Contains(err.Error(), "visible") {
		t.Errorf("charge with a publishable key: %v", err)
	}
	if n := len(h.rec.requests()); n != 0 {
		t.Errorf("%d requests with unusable credentials", n)
	}
}
