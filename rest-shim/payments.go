package restshim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The payments API for trusted backends ({payments_origin}/api/v1). Each route
// authenticates the service client, reads and checks its body, and calls one
// internal operation of the payments subgraph, which owns every rule; the
// shim maps the answer to HTTP.

// PaymentsBasePath is the payments API's base path on its origin.
const PaymentsBasePath = "/api/v1"

// maxPaymentsBody bounds a payments request's JSON body.
const maxPaymentsBody = 16 << 10

const (
	billingAccountFields = `id accountReference balances { resourceType available held }
    autoReload { enabled threshold offerId paymentMethodId consecutiveFailures disabledReason updatedAt } createdAt`
	offerFields    = `id resourceType name quantity price { amount currency } merchantAccountId createdAt`
	purchaseFields = `id kind state resourceType quantity price { amount currency } failureCode failureMessage createdAt updatedAt`
	merchantFields = `id name gateway status credentialsConfigured credentialsUpdatedAt createdAt updatedAt`
)

var (
	opAuthenticateClient = subgraph.MustParse(`query AuthenticateServiceClient($id: ID!, $secret: String!) {
  authenticateServiceClient(id: $id, secret: $secret) { id name } }`)
	opResolveAccount = subgraph.MustParse(`mutation ResolveBillingAccount($ref: String!, $assertion: String) {
  resolveBillingAccount(accountReference: $ref, assertion: $assertion) { ` + billingAccountFields + ` } }`)
	opAutoReload = subgraph.MustParse(`mutation ConfigureAutoReload($input: AutoReloadInput!) {
  configureAutoReload(input: $input) { ` + billingAccountFields + ` } }`)
	opOffers      = subgraph.MustParse(`query Offers($type: String!) { offers(resourceType: $type) { ` + offerFields + ` } }`)
	opCreateOffer = subgraph.MustParse(`mutation CreateOffer($input: OfferInput!) { createOffer(input: $input) { ` + offerFields + ` } }`)
	// A session is asked for as its rendered document (every field of
	// PaymentSession with its purchase, in one JSON value): selected field
	// by field, gqlgen's work per field was the largest cost of a create +
	// status pair after the database.
	// Its input is written in the operation, of scalar variables: an input
	// object as one variable is checked by reflection, field by field, which
	// allocated ten times as much.
	opCreateSess = subgraph.MustParse(`mutation CreatePaymentSession($billingAccountId: ID!, $offerId: ID!, $returnUrl: String!,
  $cancelUrl: String, $parentOrigin: String, $expiresInSeconds: Int, $key: String!, $requestHash: String!) {
  createPaymentSession(input: {billingAccountId: $billingAccountId, offerId: $offerId, returnUrl: $returnUrl, cancelUrl: $cancelUrl,
    parentOrigin: $parentOrigin, expiresInSeconds: $expiresInSeconds, key: {key: $key, requestHash: $requestHash}}) {
    replayed token session { document } } }`)
	opSessionStatus    = subgraph.MustParse(`query PaymentSession($id: ID!) { paymentSession(id: $id) { document } }`)
	opMerchants        = subgraph.MustParse(`query MerchantAccounts { merchantAccounts { ` + merchantFields + ` } }`)
	opCreateMerchant   = subgraph.MustParse(`mutation CreateMerchantAccount($input: MerchantAccountInput!) { createMerchantAccount(input: $input) { ` + merchantFields + ` } }`)
	opSetCredentials   = subgraph.MustParse(`mutation SetMerchantCredentials($id: ID!, $credentials: String!) { setMerchantCredentials(id: $id, credentials: $credentials) { ` + merchantFields + ` } }`)
	opRevokeCredential = subgraph.MustParse(`mutation RevokeMerchantCredentials($id: ID!) { revokeMerchantCredentials(id: $id) { ` + merchantFields + ` } }`)
)

// payments calls the payments subgraph for the payments routes.
type paymentsAPI struct {
	client *subgraph.Client
	idem   *idempotency.Service
	// publicURL is {payments_origin}: the hosted checkout is served there.
	publicURL string
	log       zerolog.Logger
	// auths spares the subgraph a secret check per request (clientauth.go).
	auths *clientAuths
}

// fail answers a failed internal call: a refusal with its code and status,
// anything else as the payments service being unavailable (logged).
func (p *paymentsAPI) fail(w http.ResponseWriter, err error) {
	var re *routeError
	if errors.As(err, &re) {
		re.write(w)
		return
	}
	// A client revoked since its secret was verified (requireClient reuses
	// a verification for clientAuthTTL) is refused as any bad credential.
	var gerrs subgraph.Errors
	if errors.As(err, &gerrs) && gerrs.Code() == "CLIENT_NOT_ACTIVE" {
		p.unauthorized(w)
		return
	}
	if re, ok := refusal(err); ok {
		re.write(w)
		return
	}
	if errors.As(err, &gerrs) && gerrs.Code() == "BAD_USER_INPUT" {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", gerrs[0].Message)
		return
	}
	p.log.Error().Err(err).Msg("payments call failed")
	apierr.Write(w, http.StatusBadGateway, apierr.CodeUnavailable, "the payments service is unavailable; try again shortly")
}

// UnauthorizedClient is the one body of every refused service-client
// credential: unknown client, wrong or rotated-out secret, revoked client,
// missing or malformed headers.
const unauthorizedClientMessage = "send a valid service client secret as Authorization: Bearer <secret> and its ID as X-Service-Client-Id"

// requireClient authenticates the service client and puts it in the
// request's identity for the internal calls. A verification is reused for
// clientAuthTTL; the subgraph checks the client is active on every call.
func (p *paymentsAPI) requireClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Service-Client-Id")
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || id == "" || secret == "" || len(id) > 64 || len(secret) > 256 || len(r.Header.Values("Authorization")) != 1 {
			p.unauthorized(w)
			return
		}
		d := p.auths.digest(id, secret)
		if !p.auths.verified(d) {
			var out struct {
				AuthenticateServiceClient *struct{ ID string }
			}
			ctx := trust.WithIdentity(r.Context(), trust.Identity{})
			if err := p.client.Do(ctx, opAuthenticateClient, map[string]any{"id": id, "secret": secret}, &out); err != nil {
				p.fail(w, err)
				return
			}
			if out.AuthenticateServiceClient == nil || out.AuthenticateServiceClient.ID != id {
				p.unauthorized(w)
				return
			}
			p.auths.remember(d)
		}
		next.ServeHTTP(w, r.WithContext(trust.WithIdentity(r.Context(), trust.Identity{ClientID: id})))
	})
}

func (p *paymentsAPI) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="payments"`)
	apierr.Write(w, http.StatusUnauthorized, apierr.CodeUnauthorized, unauthorizedClientMessage)
}

// readBody reads a bounded JSON object body into v, strictly (jsonbody).
// Raw card data is refused by name: it belongs on the card route alone.
func readBody(w http.ResponseWriter, r *http.Request, max int64, v any) ([]byte, error) {
	body, err := jsonbody.Read(w, r, max)
	if err != nil {
		return nil, bodyError(err, "")
	}
	if err := jsonbody.Valid(body); err != nil {
		return nil, bodyError(err, "")
	}
	if holdsCardData(body) {
		clear(body)
		return nil, &routeError{Status: http.StatusBadRequest, Code: "card_data_not_accepted", Message: "raw card data is accepted only by " + PCIPath + " on the payments origin, from the checkout page"}
	}
	if err := decodeBody(body, v, ""); err != nil {
		return nil, err
	}
	return body, nil
}

// call runs op and writes its field as {"data": …} with status.
func (p *paymentsAPI) call(w http.ResponseWriter, r *http.Request, op *subgraph.Operation, vars map[string]any, field string, status int) {
	resp, err := p.run(r.Context(), op, vars, field, status)
	if err != nil {
		p.fail(w, err)
		return
	}
	writeStored(w, resp, false)
}

// run runs op and builds the {"data": …} response.
func (p *paymentsAPI) run(ctx context.Context, op *subgraph.Operation, vars map[string]any, field string, status int) (*idempotency.Response, error) {
	raw, err := p.client.Field(ctx, op, vars, field)
	if err != nil {
		return nil, err
	}
	return dataResponse(status, raw), nil
}

func dataResponse(status int, raw json.RawMessage) *idempotency.Response {
	var b bytes.Buffer
	b.WriteString(`{"data":`)
	b.Write(raw)
	b.WriteString("}\n")
	return &idempotency.Response{Status: status, Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, Body: b.Bytes()}
}

// idempotent runs a route that requires an Idempotency-Key (scoped to the
// client); the body was read and checked before anything is claimed.
func (p *paymentsAPI) idempotent(w http.ResponseWriter, r *http.Request, route, key string, body []byte, run func(ctx context.Context) (*idempotency.Response, error)) {
	caller, _ := trust.FromContext(r.Context())
	claim, ok := claimKey(w, r, p.idem, caller.ClientID, route, key, body, p.log)
	if !ok {
		return
	}
	runIdempotent(r.Context(), w, p.idem, claim, p.log, run, p.fail)
}

// POST /billing-accounts/resolve
func (p *paymentsAPI) resolveAccount(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AccountReference *string `json:"accountReference"`
		Assertion        *string `json:"assertion"`
	}
	if _, err := readBody(w, r, maxPaymentsBody, &in); err != nil {
		p.fail(w, err)
		return
	}
	if in.AccountReference == nil {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "accountReference is required: your own ID for the customer whose account this is")
		return
	}
	p.call(w, r, opResolveAccount, map[string]any{"ref": *in.AccountReference, "assertion": in.Assertion}, "resolveBillingAccount", http.StatusOK)
}

// POST /billing-accounts/auto-reload
func (p *paymentsAPI) autoReload(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AccountReference *string `json:"accountReference"`
		Assertion        *string `json:"assertion"`
		Enabled          *bool   `json:"enabled"`
		Threshold        *int64  `json:"threshold"`
		OfferID          *string `json:"offerId"`
		PaymentMethodID  *string `json:"paymentMethodId"`
	}
	if _, err := readBody(w, r, maxPaymentsBody, &in); err != nil {
		p.fail(w, err)
		return
	}
	if in.AccountReference == nil || in.Enabled == nil {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "accountReference and enabled are required (with enabled: threshold, offerId and paymentMethodId)")
		return
	}
	p.call(w, r, opAutoReload, map[string]any{"input": map[string]any{"accountReference": *in.AccountReference, "assertion": in.Assertion,
		"enabled": *in.Enabled, "threshold": in.Threshold, "offerId": in.OfferID, "paymentMethodId": in.PaymentMethodID}}, "configureAutoReload", http.StatusOK)
}

// GET /offers?resourceType=
func (p *paymentsAPI) listOffers(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("resourceType")
	if t == "" {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "resourceType is required, such as ?resourceType=ai_credits")
		return
	}
	p.call(w, r, opOffers, map[string]any{"type": t}, "offers", http.StatusOK)
}

// POST /offers (Idempotency-Key)
func (p *paymentsAPI) createOffer(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var in struct {
		ResourceType      string `json:"resourceType"`
		Name              string `json:"name"`
		Quantity          *int64 `json:"quantity"`
		MerchantAccountID string `json:"merchantAccountId"`
		Price             *struct {
			Amount   *int64 `json:"amount"`
			Currency string `json:"currency"`
		} `json:"price"`
	}
	body, err := readBody(w, r, maxPaymentsBody, &in)
	if err != nil {
		p.fail(w, err)
		return
	}
	if in.Quantity == nil || in.Price == nil || in.Price.Amount == nil {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "resourceType, name, quantity, price {amount, currency} and merchantAccountId are required")
		return
	}
	vars := map[string]any{"input": map[string]any{"resourceType": in.ResourceType, "name": in.Name, "quantity": *in.Quantity,
		"price": *in.Price.Amount, "currency": in.Price.Currency, "merchantAccountId": in.MerchantAccountID}}
	p.idempotent(w, r, "payments:create-offer", key, body, func(ctx context.Context) (*idempotency.Response, error) {
		return p.run(ctx, opCreateOffer, vars, "createOffer", http.StatusCreated)
	})
}

// POST /payment-sessions (Idempotency-Key). The subgraph keeps the key in
// the transaction that writes the session, instead of a claim and a finish
// in the access store around the call: a retry with the key gets the first
// answer (Idempotent-Replayed: true), a concurrent one waits for the first
// to commit and gets it too, and the key with another body is a 422.
func (p *paymentsAPI) createSession(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var in struct {
		BillingAccountID string  `json:"billingAccountId"`
		OfferID          string  `json:"offerId"`
		ReturnURL        string  `json:"returnUrl"`
		CancelURL        *string `json:"cancelUrl"`
		ParentOrigin     *string `json:"parentOrigin"`
		ExpiresInSeconds *int64  `json:"expiresInSeconds"`
	}
	body, err := readBody(w, r, maxPaymentsBody, &in)
	if err != nil {
		p.fail(w, err)
		return
	}
	if in.BillingAccountID == "" || in.OfferID == "" || in.ReturnURL == "" {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "billingAccountId, offerId and returnUrl are required")
		return
	}
	vars := map[string]any{"billingAccountId": in.BillingAccountID, "offerId": in.OfferID, "returnUrl": in.ReturnURL,
		"cancelUrl": in.CancelURL, "parentOrigin": in.ParentOrigin, "expiresInSeconds": in.ExpiresInSeconds,
		"key": key, "requestHash": idempotency.RequestHash(r.Method, "payments:create-session", body)}
	v, err := p.client.Field(r.Context(), opCreateSess, vars, "createPaymentSession")
	var c created
	if err == nil {
		c, err = splitCreated(v)
	}
	if err != nil {
		if re, ok := refusal(err); ok && re.Code == CodeIdempotencyKeyReused {
			telemetry.FromContext(r.Context()).Idempotency("conflict")
		}
		p.fail(w, err)
		return
	}
	if c.replayed {
		telemetry.FromContext(r.Context()).Idempotency("replayed")
	}
	// The session as the subgraph shows it, with the one-time hosted URL.
	// The token rides in the URL's fragment: browsers never send it to a
	// server, in a request line or a Referer.
	u, _ := json.Marshal(p.publicURL + HostedCheckoutPath + "/" + c.id + "#token=" + c.token)
	raw := append(append(append(c.session[:len(c.session)-1:len(c.session)-1], `,"url":`...), u...), '}')
	writeStored(w, dataResponse(http.StatusCreated, raw), c.replayed)
}

// created is createPaymentSession's value, cut apart.
type created struct {
	replayed bool
	token    string
	session  []byte // the session's document
	id       string // the session's ID
}

// splitCreated takes createPaymentSession's value apart. The subgraph
// writes it in the operation's order,
// {"replayed":false,"token":"…","session":{"document":{"id":"…",…}}}, and
// neither a token (base64url) nor an ID holds a character JSON escapes: that
// shape is cut apart without decoding the session; anything else is decoded.
func splitCreated(v []byte) (created, error) {
	const mid = `","session":`
	for _, start := range []struct {
		head     string
		replayed bool
	}{{`{"replayed":false,"token":"`, false}, {`{"replayed":true,"token":"`, true}} {
		rest, ok := bytes.CutPrefix(v, []byte(start.head))
		if !ok {
			continue
		}
		if t, sess, ok := bytes.Cut(rest, []byte(mid)); ok && len(t) > 0 && plainJSONString(t) && len(sess) > 1 && sess[len(sess)-1] == '}' {
			if doc, id, ok := cutDocument(sess[:len(sess)-1]); ok {
				return created{replayed: start.replayed, token: string(t), session: doc, id: id}, nil
			}
		}
	}
	var out struct {
		Replayed bool            `json:"replayed"`
		Token    string          `json:"token"`
		Session  json.RawMessage `json:"session"`
	}
	if err := json.Unmarshal(v, &out); err != nil {
		return created{}, fmt.Errorf("create payment session: %w", err)
	}
	doc, id, err := sessionDocument(out.Session)
	if err != nil {
		return created{}, fmt.Errorf("create payment session: %w", err)
	}
	if out.Token == "" {
		return created{}, errors.New("create payment session: no token")
	}
	return created{replayed: out.Replayed, token: out.Token, session: doc, id: id}, nil
}

// sessionDocument takes the document and its ID out of a PaymentSession
// value, {"document":{"id":"…",…}}: cut apart when it comes as the subgraph
// writes it, decoded otherwise.
func sessionDocument(v []byte) (doc []byte, id string, err error) {
	if doc, id, ok := cutDocument(v); ok {
		return doc, id, nil
	}
	var s struct{ Document json.RawMessage }
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, "", fmt.Errorf("payment session: %w", err)
	}
	doc = bytes.TrimRight(s.Document, " \n")
	var d struct{ ID string }
	if len(doc) < 2 || doc[len(doc)-1] != '}' || json.Unmarshal(doc, &d) != nil || d.ID == "" {
		return nil, "", errors.New("payment session: the document is not a JSON object with an ID")
	}
	return doc, d.ID, nil
}

// cutDocument is sessionDocument's fast path: v is exactly
// {"document":{"id":"<plain ID>",…}}.
func cutDocument(v []byte) (doc []byte, id string, ok bool) {
	const head, idHead = `{"document":`, `{"id":"`
	doc, ok = bytes.CutPrefix(v, []byte(head))
	if !ok || len(doc) < 2 || doc[len(doc)-1] != '}' {
		return nil, "", false
	}
	doc = doc[:len(doc)-1]
	after, ok := bytes.CutPrefix(doc, []byte(idHead))
	if !ok || doc[len(doc)-1] != '}' {
		return nil, "", false
	}
	if i := bytes.IndexByte(after, '"'); i > 0 && plainJSONString(after[:i]) {
		return doc, string(after[:i]), true
	}
	return nil, "", false
}

// plainJSONString reports whether b is a JSON string's content that needs no
// unescaping: printable ASCII without quotes or backslashes.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// HostedCheckoutPath is the hosted checkout page on the payments origin.
const HostedCheckoutPath = "/checkout"

// GET /payment-sessions/{id}/status
func (p *paymentsAPI) sessionStatus(w http.ResponseWriter, r *http.Request) {
	v, err := p.client.Field(r.Context(), opSessionStatus, map[string]any{"id": r.PathValue("id")}, "paymentSession")
	var doc []byte
	if err == nil {
		doc, _, err = sessionDocument(v)
	}
	if err != nil {
		p.fail(w, err)
		return
	}
	writeStored(w, dataResponse(http.StatusOK, doc), false)
}

// GET /merchant-accounts
func (p *paymentsAPI) listMerchants(w http.ResponseWriter, r *http.Request) {
	p.call(w, r, opMerchants, nil, "merchantAccounts", http.StatusOK)
}

// POST /merchant-accounts
func (p *paymentsAPI) createMerchant(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name    string `json:"name"`
		Gateway string `json:"gateway"`
	}
	if _, err := readBody(w, r, maxPaymentsBody, &in); err != nil {
		p.fail(w, err)
		return
	}
	p.call(w, r, opCreateMerchant, map[string]any{"input": map[string]any{"name": in.Name, "gateway": in.Gateway}}, "createMerchantAccount", http.StatusCreated)
}

// PUT /merchant-accounts/{id}/credentials
func (p *paymentsAPI) setCredentials(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Credentials json.RawMessage `json:"credentials"`
	}
	if _, err := readBody(w, r, maxPaymentsBody, &in); err != nil {
		p.fail(w, err)
		return
	}
	if len(in.Credentials) == 0 || in.Credentials[0] != '{' {
		apierr.Write(w, http.StatusBadRequest, "invalid_request", "credentials is required: the gateway's JSON object, such as {\"secretKey\": \"…\"} for stripe")
		return
	}
	p.call(w, r, opSetCredentials, map[string]any{"id": r.PathValue("id"), "credentials": string(in.Credentials)}, "setMerchantCredentials", http.StatusOK)
}

// DELETE /merchant-accounts/{id}/credentials
func (p *paymentsAPI) revokeCredentials(w http.ResponseWriter, r *http.Request) {
	p.call(w, r, opRevokeCredential, map[string]any{"id": r.PathValue("id")}, "revokeMerchantCredentials", http.StatusOK)
}

// cardFields are member names that carry raw card data.
var cardFields = map[string]bool{"number": true, "cardnumber": true, "card_number": true, "pan": true, "cvc": true, "cvv": true,
	"cvc2": true, "cvv2": true, "securitycode": true, "security_code": true, "card": true}

// cardFieldParts are parts of every name in cardFields: a body none of
// them appears in (ignoring case), with no escapes, names no card field.
var cardFieldParts = [][]byte{[]byte("number"), []byte("pan"), []byte("cvc"), []byte("cvv"), []byte("security"), []byte("card")}

// holdsCardData reports whether a (valid, depth-bounded) JSON body names a
// card field at any depth. A body that cannot, by its bytes, is not
// tokenized: most bodies, and tokenizing was a tenth of a create's shim.
func holdsCardData(body []byte) bool {
	if bytes.IndexByte(body, '\\') < 0 {
		lower := bytes.ToLower(body)
		if !slices.ContainsFunc(cardFieldParts, func(part []byte) bool { return bytes.Contains(lower, part) }) {
			return false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct{ object, keyNext bool }
	var open []frame
	valueDone := func() { // in an object, a key follows a value
		if n := len(open); n > 0 && open[n-1].object {
			open[n-1].keyNext = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				open = append(open, frame{object: t == '{', keyNext: t == '{'})
				continue
			}
			open = open[:len(open)-1]
			valueDone()
		case string:
			if n := len(open); n > 0 && open[n-1].keyNext {
				if cardFields[strings.ToLower(t)] {
					return true
				}
				open[n-1].keyNext = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}
