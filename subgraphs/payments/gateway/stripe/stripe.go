// Package stripe is the Stripe gateway, on Stripe's official Go client.
//
// Credentials are {"secretKey": "sk_live_…"} (or sk_test_…, or a restricted
// rk_live_…/rk_test_… key allowed to write customers, payment methods, setup
// intents and payment intents). Each call makes a client with the merchant
// account's own key; the package-wide stripe.Key is never set, so merchant
// accounts never share a key.
//
// Vault creates a PaymentMethod from the raw card, a Customer, and confirms a
// SetupIntent for off-session use, which checks the card with its bank and
// attaches it to the customer: the reference is "cus_…/pm_…". Sending raw
// card numbers to Stripe needs the account's raw card data APIs enabled
// (Stripe asks for PCI DSS SAQ D); otherwise Stripe refuses the first call.
//
// Charge confirms an off-session PaymentIntent with Stripe's Idempotency-Key
// set to the request's key: for 24 hours the same key answers the first
// outcome and never charges twice, which is how the reconciler settles a
// charge whose outcome was unknown.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/card"
)

// Name is the gateway's name in merchant accounts.
const Name = "stripe"

// DefaultTimeout bounds one gateway call (Vault's three requests, or a
// charge with its retries): well under the domain's charge lease.
const DefaultTimeout = 30 * time.Second

// Options configure the gateway. The zero value talks to Stripe itself.
type Options struct {
	// APIURL is the Stripe API's base URL (stripe-mock in tests); empty:
	// https://api.stripe.com.
	APIURL string
	// HTTPClient makes the requests; nil: one with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each Vault or Charge call as a whole; 0: DefaultTimeout.
	Timeout time.Duration
	// Retries is how often the client repeats, within one call and with the
	// same Idempotency-Key, a request that got no answer (a network error) or
	// a lock timeout; 0: 2, as Stripe's libraries do; negative: none.
	Retries int
	// Now is the clock for card expiry checks; nil: time.Now.
	Now func() time.Time
}

// Gateway is the Stripe gateway. It keeps no credentials: every call brings
// the merchant account's.
type Gateway struct {
	backends *stripego.Backends
	timeout  time.Duration
	now      func() time.Time
}

var _ payments.Gateway = (*Gateway)(nil)

// New makes the gateway; its HTTP connections are shared by every merchant
// account.
func New(o Options) (*Gateway, error) {
	if err := checkAPIURL(o.APIURL); err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	httpClient := o.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: timeout}
	}
	retries := int64(2)
	if o.Retries < 0 {
		retries = 0
	} else if o.Retries > 0 {
		retries = int64(o.Retries)
	}
	// The client's own logger is off: it would print Stripe's answers to
	// standard error, outside the platform's logger; the gateway's errors
	// carry what went wrong.
	cfg := &stripego.BackendConfig{HTTPClient: httpClient, LeveledLogger: &stripego.LeveledLogger{Level: stripego.LevelNull}, MaxNetworkRetries: stripego.Int64(retries),
		EnableTelemetry: stripego.Bool(false)}
	if o.APIURL != "" {
		cfg.URL = stripego.String(o.APIURL)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Gateway{backends: stripego.NewBackendsWithConfig(cfg), timeout: timeout, now: now}, nil
}

// checkAPIURL wants https, or http on a loopback address (stripe-mock): the
// merchant accounts' secret keys travel with every request.
func checkAPIURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		// Not quoted back: a malformed URL may hold a password.
		return errors.New("the Stripe API URL is not an absolute http(s) URL without user:password@")
	}
	if u.Scheme == "http" {
		ip, err := netip.ParseAddr(u.Hostname())
		if u.Hostname() != "localhost" && (err != nil || !ip.IsLoopback()) {
			return fmt.Errorf("the Stripe API URL must be https (http only on a loopback address, as for stripe-mock), so secret keys are not sent in clear: %s://%s", u.Scheme, u.Host)
		}
	}
	return nil
}

func (g *Gateway) Name() string { return Name }

// keyPrefixes are the keys that may create customers and charge: secret and
// restricted ones (a publishable pk_ key cannot).
var keyPrefixes = []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}

// secretKey reads the credentials; its errors name the field, never its value.
func secretKey(creds []byte) (string, error) {
	var c struct {
		SecretKey string `json:"secretKey"`
	}
	if err := json.Unmarshal(creds, &c); err != nil {
		return "", errors.New(`the stripe gateway wants {"secretKey": "sk_live_…"}: the credentials are not that JSON object`)
	}
	if c.SecretKey == "" {
		return "", errors.New(`secretKey is missing: the stripe gateway wants {"secretKey": "sk_live_…"}, a secret or restricted key from the Stripe dashboard (Developers, API keys)`)
	}
	for _, p := range keyPrefixes {
		if len(c.SecretKey) > len(p) && strings.HasPrefix(c.SecretKey, p) &&
			!strings.ContainsFunc(c.SecretKey, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return c.SecretKey, nil
		}
	}
	return "", errors.New("secretKey is not a Stripe secret key: it starts with sk_live_, sk_test_, rk_live_ or rk_test_ (a publishable pk_ key cannot charge)")
}

// CheckCredentials wants {"secretKey": "sk_live_…"}.
func (g *Gateway) CheckCredentials(creds []byte) error {
	_, err := secretKey(creds)
	return err
}

// client is a Stripe client with one merchant account's key, over the
// shared connections.
func (g *Gateway) client(creds []byte) (*stripego.Client, error) {
	key, err := secretKey(creds)
	if err != nil {
		return nil, err
	}
	return stripego.NewClient(key, stripego.WithBackends(g.backends)), nil
}

func (g *Gateway) Vault(ctx context.Context, creds []byte, c payments.Card) (payments.VaultedCard, error) {
	sc, err := g.client(creds)
	if err != nil {
		return payments.VaultedCard{}, err
	}
	// Stripe would refuse these too, later and in its own words: the same
	// checks as every gateway's give the buyer the same messages.
	checked, err := card.Check(c.Number, c.ExpMonth, c.ExpYear, c.CVC, g.now())
	if err != nil {
		return payments.VaultedCard{}, &payments.Declined{Code: "invalid_card", Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	redact := strings.NewReplacer(checked.Number, "[card number]", c.CVC, "[cvc]")

	pmParams := &stripego.PaymentMethodCreateParams{Type: stripego.String("card"), Card: &stripego.PaymentMethodCreateCardParams{
		Number: stripego.String(checked.Number), ExpMonth: stripego.Int64(int64(checked.ExpMonth)),
		ExpYear: stripego.Int64(int64(checked.ExpYear)), CVC: stripego.String(c.CVC)}}
	if c.Name != "" {
		pmParams.BillingDetails = &stripego.PaymentMethodCreateBillingDetailsParams{Name: stripego.String(c.Name)}
	}
	pm, err := sc.V1PaymentMethods.Create(ctx, pmParams)
	if err != nil {
		return payments.VaultedCard{}, vaultError("save the card", err, g.timeout, redact)
	}
	cusParams := &stripego.CustomerCreateParams{}
	if c.Name != "" {
		cusParams.Name = stripego.String(c.Name)
	}
	cus, err := sc.V1Customers.Create(ctx, cusParams)
	if err != nil {
		return payments.VaultedCard{}, vaultError("create the customer", err, g.timeout, redact)
	}
	// A confirmed off-session SetupIntent asks the bank now (a declined card
	// is refused here, not at the first reload) and attaches the card.
	si, err := sc.V1SetupIntents.Create(ctx, &stripego.SetupIntentCreateParams{
		Customer: stripego.String(cus.ID), PaymentMethod: stripego.String(pm.ID), Confirm: stripego.Bool(true),
		Usage: stripego.String("off_session"), PaymentMethodTypes: []*string{stripego.String("card")}})
	if err != nil {
		return payments.VaultedCard{}, vaultError("set the card up for later charges", err, g.timeout, redact)
	}
	switch si.Status {
	case stripego.SetupIntentStatusSucceeded:
	case stripego.SetupIntentStatusRequiresAction:
		return payments.VaultedCard{}, &payments.Declined{Code: "authentication_required",
			Message: "the card's bank asks the cardholder to confirm it (3-D Secure), which this checkout cannot do: try another card"}
	case stripego.SetupIntentStatusRequiresPaymentMethod:
		return payments.VaultedCard{}, declinedBy(si.LastSetupError)
	default:
		return payments.VaultedCard{}, &payments.Declined{Code: "processing_error",
			Message: fmt.Sprintf("the card could not be set up (Stripe says %s): try again in a moment", si.Status)}
	}
	v := payments.VaultedCard{Reference: cus.ID + "/" + pm.ID, ExpMonth: checked.ExpMonth, ExpYear: checked.ExpYear, Brand: checked.Brand, Last4: checked.Last4}
	// Stripe's own reading of the card wins when it gives one.
	if pm.Card != nil {
		if pm.Card.Brand != "" {
			v.Brand = string(pm.Card.Brand)
		}
		if pm.Card.Last4 != "" {
			v.Last4 = pm.Card.Last4
		}
		if pm.Card.ExpMonth != 0 && pm.Card.ExpYear != 0 {
			v.ExpMonth, v.ExpYear = int(pm.Card.ExpMonth), int(pm.Card.ExpYear)
		}
	}
	return v, nil
}

// parseReference splits a vault reference "cus_…/pm_…".
func parseReference(ref string) (customer, paymentMethod string, ok bool) {
	customer, paymentMethod, ok = strings.Cut(ref, "/")
	return customer, paymentMethod, ok && strings.HasPrefix(customer, "cus_") && strings.HasPrefix(paymentMethod, "pm_") &&
		!strings.Contains(paymentMethod, "/")
}

var unknownCard = &payments.Declined{Code: "card_declined", Message: "the saved card is unknown to the gateway: add it again"}

func (g *Gateway) Charge(ctx context.Context, creds []byte, req payments.ChargeRequest) (payments.Charge, error) {
	sc, err := g.client(creds)
	if err != nil {
		return payments.Charge{}, err
	}
	if req.Key == "" || req.Amount < 1 {
		return payments.Charge{}, errors.New("stripe charge: a key and a positive amount are required")
	}
	customer, paymentMethod, ok := parseReference(req.Reference)
	if !ok {
		return payments.Charge{}, unknownCard
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	params := &stripego.PaymentIntentCreateParams{
		Amount: stripego.Int64(req.Amount), Currency: stripego.String(strings.ToLower(req.Currency)),
		Customer: stripego.String(customer), PaymentMethod: stripego.String(paymentMethod),
		Confirm: stripego.Bool(true), OffSession: stripego.Bool(true), PaymentMethodTypes: []*string{stripego.String("card")},
		// The key in metadata lets an operator find the charge in the
		// dashboard after Stripe has forgotten the Idempotency-Key.
		Metadata: map[string]string{"vitola_charge_key": req.Key},
	}
	if req.Description != "" {
		params.Description = stripego.String(req.Description)
	}
	params.SetIdempotencyKey(req.Key)
	pi, err := sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return payments.Charge{}, chargeError(err, g.timeout)
	}
	switch pi.Status {
	case stripego.PaymentIntentStatusSucceeded:
		return payments.Charge{ID: pi.ID}, nil
	case stripego.PaymentIntentStatusRequiresAction:
		return payments.Charge{}, authenticationRequired
	case stripego.PaymentIntentStatusRequiresPaymentMethod, stripego.PaymentIntentStatusCanceled:
		return payments.Charge{}, declinedBy(pi.LastPaymentError)
	default:
		// processing (not for cards today): Stripe has not decided; the
		// reconciler asks again.
		return payments.Charge{}, fmt.Errorf("stripe charge: the payment is %s: %w", pi.Status, payments.ErrOutcomeUnknown)
	}
}

// Refund refunds a PaymentIntent's amount, once per key.
func (g *Gateway) Refund(ctx context.Context, creds []byte, chargeID string, amount int64, key string) error {
	sc, err := g.client(creds)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(chargeID, "pi_") || amount < 1 || key == "" {
		return errors.New("stripe refund: a PaymentIntent, a positive amount and a key are required")
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	params := &stripego.RefundCreateParams{PaymentIntent: stripego.String(chargeID), Amount: stripego.Int64(amount)}
	params.SetIdempotencyKey(key)
	if _, err := sc.V1Refunds.Create(ctx, params); err != nil {
		return fmt.Errorf("stripe refund: %w", chargeError(err, g.timeout))
	}
	return nil
}

var authenticationRequired = &payments.Declined{Code: "authentication_required",
	Message: "the card's bank asks the cardholder to confirm this payment (3-D Secure), which cannot happen while they are away: pay once at checkout with the cardholder present, or save another card"}

// decline is a stable code and a message for the buyer.
type decline struct{ code, message string }

var (
	cardDeclined      = decline{"card_declined", "the card was declined: try another card"}
	insufficientFunds = decline{"insufficient_funds", "the card has insufficient funds: try another card"}
	expiredCard       = decline{"expired_card", "the card has expired: try another card"}
	incorrectCVC      = decline{"incorrect_cvc", "the card's security code (CVC) is incorrect: check it and try again"}
	processingError   = decline{"processing_error", "the card could not be processed: try again in a moment"}
)

// declines maps Stripe's codes and decline codes (docs.stripe.com/declines/codes)
// to ours; any other is card_declined.
var declines = map[string]decline{
	"card_declined":          cardDeclined,
	"generic_decline":        cardDeclined,
	"insufficient_funds":     insufficientFunds,
	"expired_card":           expiredCard,
	"incorrect_cvc":          incorrectCVC,
	"invalid_cvc":            incorrectCVC,
	"processing_error":       processingError,
	"try_again_later":        processingError,
	"incorrect_number":       {"card_declined", "the card number is incorrect: check it or try another card"},
	"invalid_number":         {"card_declined", "the card number is incorrect: check it or try another card"},
	"invalid_expiry_month":   {"card_declined", "the card's expiry month is incorrect: check it"},
	"invalid_expiry_year":    {"card_declined", "the card's expiry year is incorrect: check it"},
	"card_not_supported":     {"card_declined", "this card does not support this kind of purchase: try another card"},
	"currency_not_supported": {"card_declined", "this card cannot pay in this currency: try another card"},
}

// declinedBy reads a card error: the decline code says more than the code
// (card_declined with insufficient_funds), so it is looked up first.
func declinedBy(e *stripego.Error) *payments.Declined {
	if e == nil {
		return &payments.Declined{Code: cardDeclined.code, Message: cardDeclined.message}
	}
	for _, c := range []string{string(e.DeclineCode), string(e.Code)} {
		if c == string(stripego.ErrorCodeAuthenticationRequired) {
			return authenticationRequired
		}
		if d, ok := declines[c]; ok {
			return &payments.Declined{Code: d.code, Message: d.message}
		}
	}
	return &payments.Declined{Code: cardDeclined.code, Message: cardDeclined.message}
}

// uncertain says whether Stripe's answer leaves open whether it acted: a
// failure on the way (5xx, 429), or an idempotency conflict (the first
// request with the key is in flight, or was made with other parameters).
func uncertain(e *stripego.Error) bool {
	return e.HTTPStatusCode >= 500 || e.HTTPStatusCode == http.StatusTooManyRequests ||
		e.HTTPStatusCode == http.StatusConflict || e.Type == stripego.ErrorTypeIdempotency
}

// chargeError sorts a failed charge by what it says of the money: Stripe
// said no (a *Declined), or it may have charged (ErrOutcomeUnknown), which
// is every failure without a definite answer.
func chargeError(err error, timeout time.Duration) error {
	var se *stripego.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("stripe charge: %s: %w", noAnswer(err, timeout), payments.ErrOutcomeUnknown)
	}
	switch {
	case se.Type == stripego.ErrorTypeCard:
		return declinedBy(se)
	case uncertain(se):
		return fmt.Errorf("stripe charge: Stripe answered %d (%s): %w", se.HTTPStatusCode, describe(se, nil), payments.ErrOutcomeUnknown)
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		return &payments.Declined{Code: "merchant_not_ready",
			Message: "the merchant account cannot take payments now: Stripe refused its key (update the merchant account's credentials)"}
	case se.Code == stripego.ErrorCodeResourceMissing:
		return unknownCard
	default:
		// Any other refusal of the request: nothing was charged.
		return &payments.Declined{Code: "processing_error", Message: "Stripe refused the charge: " + describe(se, nil)}
	}
}

// vaultError is a card error as a *Declined, any other failure as an error
// that says what went wrong without the card.
func vaultError(step string, err error, timeout time.Duration, redact *strings.Replacer) error {
	var se *stripego.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("stripe vault: %s: %s", step, noAnswer(err, timeout))
	}
	switch {
	case se.Type == stripego.ErrorTypeCard:
		return declinedBy(se)
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		return fmt.Errorf("stripe vault: %s: Stripe refused the merchant account's key (%d): update its credentials", step, se.HTTPStatusCode)
	default:
		return fmt.Errorf("stripe vault: %s: Stripe answered %d (%s)", step, se.HTTPStatusCode, describe(se, redact))
	}
}

// describe is a Stripe error's type, code, parameter and message, with the
// card's number and CVC taken out should Stripe ever quote them.
func describe(se *stripego.Error, redact *strings.Replacer) string {
	parts := []string{string(se.Type)}
	if se.Code != "" {
		parts = append(parts, string(se.Code))
	}
	if se.Param != "" {
		parts = append(parts, "parameter "+se.Param)
	}
	s := strings.Join(parts, ", ")
	if se.Msg != "" {
		s += ": " + se.Msg
	}
	if redact != nil {
		s = redact.Replace(s)
	}
	return s
}

// noAnswer says why no answer came, without the URL (it may name an
// internal proxy) or anything of the request.
func noAnswer(err error, timeout time.Duration) string {
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "the call was cancelled before Stripe answered"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer from Stripe within %s", timeout)
	case errors.As(err, &dns):
		return "the Stripe API's host name did not resolve"
	case errors.As(err, &op) && op.Op == "dial":
		return "could not connect to the Stripe API"
	case errors.As(err, &op):
		return "the connection to the Stripe API failed before an answer"
	default:
		return "no readable answer from the Stripe API"
	}
}
