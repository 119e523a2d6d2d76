package restshim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The hosted checkout's browser routes. A browser redeems a session's
// one-time token and gets the action cookie: HMAC-signed (the key derives
// from the internal key, so every shim replica accepts it), naming the
// session, its billing account and its expiry. Every later route reads the
// cookie and acts for that session alone; the payments subgraph checks that
// the session is still active and the account's.
//
// CSRF: the cookie is SameSite=None (it must work inside a registered
// site's iframe), so every state-changing route also requires the header
// X-Vitola-Checkout (a page of another origin cannot send a custom header
// without a CORS preflight, which this origin never grants) and an Origin
// equal to the payments origin.

// CheckoutCookie names the action cookie. __Host-: Secure, Path=/, no Domain.
const CheckoutCookie = "__Host-vitola-checkout"

// CheckoutHeader is the header every state-changing checkout request sends.
const CheckoutHeader = "X-Vitola-Checkout"

// PCIPath is the only route that accepts raw card data.
const PCIPath = "/api/pci/v1/payment-methods"

const hostedFields = `id state billingAccountId expiresAt returnUrl cancelUrl offer { id name resourceType quantity }
    purchase { ` + purchaseFields + ` } paymentMethods { ` + methodFields + ` }`
const methodFields = `id brand last4 expMonth expYear isDefault createdAt`

var (
	opRedeem         = subgraph.MustParse(`mutation RedeemPaymentSession($token: String!, $session: ID) { redeemPaymentSession(token: $token, sessionId: $session) { ` + hostedFields + ` } }`)
	opHosted         = subgraph.MustParse(`query HostedSession { hostedSession { ` + hostedFields + ` } }`)
	opCancelHosted   = subgraph.MustParse(`mutation CancelHostedSession { cancelHostedSession { ` + hostedFields + ` } }`)
	opMethods        = subgraph.MustParse(`query PaymentMethods { paymentMethods { ` + methodFields + ` } }`)
	opAddTokenMethod = subgraph.MustParse(`mutation AddTokenPaymentMethod($token: String!, $makeDefault: Boolean) {
  addTokenPaymentMethod(gatewayToken: $token, makeDefault: $makeDefault) { ` + methodFields + ` } }`)
	opSetDefault   = subgraph.MustParse(`mutation SetDefaultPaymentMethod($id: ID!) { setDefaultPaymentMethod(id: $id) { ` + methodFields + ` } }`)
	opDeleteMethod = subgraph.MustParse(`mutation DeletePaymentMethod($id: ID!) { deletePaymentMethod(id: $id) }`)
	opConfirm      = subgraph.MustParse(`mutation ConfirmPurchase($purchase: ID!, $method: ID!) {
  confirmPurchase(purchaseId: $purchase, paymentMethodId: $method) { outcome declineCode declineMessage purchase { ` + purchaseFields + ` } session { ` + hostedFields + ` } } }`)
	opFrameOrigins = subgraph.MustParse(`query CheckoutFrameOrigins($id: ID!) { checkoutFrameOrigins(sessionId: $id) }`)
)

// checkoutCookies signs and reads action cookies.
type checkoutCookies struct {
	key []byte
	now func() time.Time
}

func (c checkoutCookies) mac(payload string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("vitola checkout cookie\x00" + payload))
	return m.Sum(nil)
}

// value signs a session, its account and its expiry.
func (c checkoutCookies) value(session, account string, expires time.Time) string {
	payload := session + "." + account + "." + strconv.FormatInt(expires.Unix(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(c.mac(payload))
}

// read returns the session and account of a valid, unexpired cookie.
func (c checkoutCookies) read(r *http.Request) (session, account string, ok bool) {
	ck, err := r.Cookie(CheckoutCookie)
	if err != nil || len(ck.Value) > 512 {
		return "", "", false
	}
	p64, m64, found := strings.Cut(ck.Value, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(m64)
	if !found || err1 != nil || err2 != nil || !hmac.Equal(sig, c.mac(string(payload))) {
		return "", "", false
	}
	parts := strings.Split(string(payload), ".")
	if len(parts) != 3 {
		return "", "", false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !c.now().Before(time.Unix(exp, 0)) {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// set sends the action cookie, living until the session expires.
func (c checkoutCookies) set(w http.ResponseWriter, session, account string, expires time.Time) {
	maxAge := int(time.Until(expires).Seconds())
	if maxAge < 1 {
		maxAge = 1
	}
	// net/http's Cookie has Partitioned; SameSite=None needs Secure.
	http.SetCookie(w, &http.Cookie{Name: CheckoutCookie, Value: c.value(session, account, expires), Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteNoneMode, Partitioned: true})
}

func clearCheckoutCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: CheckoutCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteNoneMode, Partitioned: true})
}

// checkoutAPI serves the hosted checkout's routes.
type checkoutAPI struct {
	*paymentsAPI
	cookies checkoutCookies
	// origin is the payments origin (scheme://host[:port]) a state-changing
	// request's Origin must name.
	origin string
}

func newCheckoutAPI(p *paymentsAPI, cookieKey []byte) *checkoutAPI {
	origin := p.publicURL
	if u, err := url.Parse(p.publicURL); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	return &checkoutAPI{paymentsAPI: p, cookies: checkoutCookies{key: cookieKey, now: time.Now}, origin: origin}
}

// sameOrigin refuses a state-changing request that another site could have
// made: it must carry CheckoutHeader and come from the payments origin.
func (c *checkoutAPI) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get(CheckoutHeader) == "" || r.Header.Get("Origin") != c.origin {
		apierr.Write(w, http.StatusForbidden, "cross_site_request", "checkout actions come from the checkout page itself (same Origin and the "+CheckoutHeader+" header)")
		return false
	}
	return true
}

// session reads the action cookie: a request without a valid one is 401.
func (c *checkoutAPI) session(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && !c.sameOrigin(w, r) {
			return
		}
		sid, acc, ok := c.cookies.read(r)
		if !ok {
			c.unauthorizedBrowser(w)
			return
		}
		next(w, r.WithContext(trust.WithIdentity(r.Context(), trust.Identity{CheckoutSession: sid, CheckoutAccount: acc})))
	}
}

func (c *checkoutAPI) unauthorizedBrowser(w http.ResponseWriter) {
	apierr.Write(w, http.StatusUnauthorized, apierr.CodeUnauthorized, "this checkout session is over or not yours: open the payment link again")
}

// fail answers a checkout route's failure; an invalid session is the one 401.
func (c *checkoutAPI) fail(w http.ResponseWriter, err error) {
	if re, ok := refusal(err); ok && re.Code == "hosted_session_invalid" {
		c.unauthorizedBrowser(w)
		return
	}
	c.paymentsAPI.fail(w, err)
}

func (c *checkoutAPI) call(w http.ResponseWriter, r *http.Request, op *subgraph.Operation, vars map[string]any, field string, status int) {
	resp, err := c.run(r.Context(), op, vars, field, status)
	if err != nil {
		c.fail(w, err)
		return
	}
	writeStored(w, resp, false)
}

// POST /api/v1/payment-sessions/redeem {token}
func (c *checkoutAPI) redeem(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !c.sameOrigin(w, r) {
		return
	}
	var in struct {
		Token     string `json:"token"`
		SessionID string `json:"sessionId"`
	}
	if _, err := readBody(w, r, maxCheckoutBody, &in); err != nil {
		c.fail(w, err)
		return
	}
	var out struct {
		RedeemPaymentSession json.RawMessage `json:"redeemPaymentSession"`
	}
	if err := c.client.Do(r.Context(), opRedeem, map[string]any{"token": in.Token, "session": in.SessionID}, &out); err != nil {
		c.fail(w, err)
		return
	}
	var s struct {
		ID               string `json:"id"`
		BillingAccountID string `json:"billingAccountId"`
		ExpiresAt        time.Time
	}
	if err := json.Unmarshal(out.RedeemPaymentSession, &s); err != nil {
		c.fail(w, err)
		return
	}
	c.cookies.set(w, s.ID, s.BillingAccountID, s.ExpiresAt)
	writeStored(w, dataResponse(http.StatusOK, out.RedeemPaymentSession), false)
}

// GET /api/v1/payment-sessions/current
func (c *checkoutAPI) current(w http.ResponseWriter, r *http.Request) {
	c.call(w, r, opHosted, nil, "hostedSession", http.StatusOK)
}

// POST /api/v1/payment-sessions/current/cancel
func (c *checkoutAPI) cancel(w http.ResponseWriter, r *http.Request) {
	resp, err := c.run(r.Context(), opCancelHosted, nil, "cancelHostedSession", http.StatusOK)
	if err != nil {
		c.fail(w, err)
		return
	}
	clearCheckoutCookie(w)
	writeStored(w, resp, false)
}

// GET /api/v1/payment-methods
func (c *checkoutAPI) listMethods(w http.ResponseWriter, r *http.Request) {
	c.call(w, r, opMethods, nil, "paymentMethods", http.StatusOK)
}

// POST /api/v1/payment-methods {gatewayToken, makeDefault}: a card a
// gateway's browser library tokenized. Raw card data is refused here.
func (c *checkoutAPI) addMethod(w http.ResponseWriter, r *http.Request) {
	var in struct {
		GatewayToken string `json:"gatewayToken"`
		MakeDefault  *bool  `json:"makeDefault"`
	}
	if _, err := readBody(w, r, maxCardBody, &in); err != nil {
		c.fail(w, err)
		return
	}
	if in.GatewayToken == "" {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "gatewayToken is required: a token made by the gateway's browser library (raw cards go to "+PCIPath+")")
		return
	}
	c.call(w, r, opAddTokenMethod, map[string]any{"token": in.GatewayToken, "makeDefault": in.MakeDefault}, "addTokenPaymentMethod", http.StatusCreated)
}

// PATCH /api/v1/payment-methods/{id}/default
func (c *checkoutAPI) setDefault(w http.ResponseWriter, r *http.Request) {
	c.call(w, r, opSetDefault, map[string]any{"id": r.PathValue("id")}, "setDefaultPaymentMethod", http.StatusOK)
}

// DELETE /api/v1/payment-methods/{id}
func (c *checkoutAPI) deleteMethod(w http.ResponseWriter, r *http.Request) {
	if _, err := c.client.Field(r.Context(), opDeleteMethod, map[string]any{"id": r.PathValue("id")}, "deletePaymentMethod"); err != nil {
		c.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// POST /api/v1/purchase-intents/{id}/confirm {paymentMethodId} (Idempotency-Key)
func (c *checkoutAPI) confirm(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var in struct {
		PaymentMethodID string `json:"paymentMethodId"`
	}
	body, err := readBody(w, r, maxCheckoutBody, &in)
	if err != nil {
		c.fail(w, err)
		return
	}
	if in.PaymentMethodID == "" {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "paymentMethodId is required: a saved card of this checkout")
		return
	}
	id, _ := trust.FromContext(r.Context())
	vars := map[string]any{"purchase": r.PathValue("id"), "method": in.PaymentMethodID}
	claim, ok := claimKey(w, r, c.idem, "checkout:"+id.CheckoutSession, "payments:confirm:"+r.PathValue("id"), key, body, c.log)
	if !ok {
		return
	}
	// A decline is the attempt's answer and is kept for replay like a
	// success: a new card is new work, with a new key.
	runIdempotentKeeping(r.Context(), w, c.idem, claim, c.log, func(ctx context.Context) (*idempotency.Response, error) {
		raw, err := c.client.Field(ctx, opConfirm, vars, "confirmPurchase")
		if err != nil {
			return nil, err
		}
		var res struct {
			Outcome        string `json:"outcome"`
			DeclineCode    string `json:"declineCode"`
			DeclineMessage string `json:"declineMessage"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, err
		}
		switch res.Outcome {
		case "declined":
			b, _ := json.Marshal(map[string]any{"error": "card_declined", "message": res.DeclineMessage, "declineCode": res.DeclineCode, "data": json.RawMessage(raw)})
			return &idempotency.Response{Status: http.StatusPaymentRequired, Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, Body: append(b, '\n')}, nil
		case "pending":
			return dataResponse(http.StatusAccepted, raw), nil
		}
		return dataResponse(http.StatusOK, raw), nil
	}, c.fail, func(status int) bool { return status < 300 || status == http.StatusPaymentRequired })
}

// POST /api/pci/v1/payment-methods: raw card data, passed as bytes to the
// payments subgraph's card route. The shim neither parses nor logs it.
func (c *checkoutAPI) pci(w http.ResponseWriter, r *http.Request) {
	body, err := jsonbody.Read(w, r, maxCardBody)
	if err != nil {
		c.fail(w, bodyError(err, ""))
		return
	}
	defer clear(body)
	u := strings.TrimSuffix(c.client.URL, "/graphql") + "/pci/payment-methods"
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		c.fail(w, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.client.HTTP.Do(req)
	if err != nil {
		c.log.Error().Str("route", PCIPath).Msg("the payments card route is unreachable") // never the error: it may quote the request
		apierr.Write(w, http.StatusBadGateway, apierr.CodeUnavailable, "the card could not be saved now; try again shortly")
		return
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, 16<<10))
	if res.StatusCode == http.StatusUnauthorized || bytes.Contains(out, []byte(`"hosted_session_invalid"`)) {
		c.unauthorizedBrowser(w)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(res.StatusCode)
	w.Write(out)
}

// frameOrigins asks which origins may embed a session's checkout page.
func (c *checkoutAPI) frameOrigins(ctx context.Context, sessionID string) []string {
	var out struct{ CheckoutFrameOrigins []string }
	if err := c.client.Do(trust.WithIdentity(ctx, trust.Identity{}), opFrameOrigins, map[string]any{"id": sessionID}, &out); err != nil {
		c.log.Error().Err(err).Msg("checkout frame origins")
		return nil
	}
	return out.CheckoutFrameOrigins
}
