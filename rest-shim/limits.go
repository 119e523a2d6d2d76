package restshim

import "net/http"

// The hosted checkout's bodies: a token or an ID (maxCheckoutBody), a
// gateway's card token or a card (maxCardBody; the payments subgraph's card
// route reads at most as much, pci.MaxBody).
const (
	maxCheckoutBody = 1 << 10
	maxCardBody     = 4 << 10
)

// BodyLimit is the most bytes of JSON one route reads: a larger body is a
// 413 body_too_large, not read further.
type BodyLimit struct {
	Payments bool   // on the payments origin, else on the API's
	Method   string // as in the OpenAPI documents
	Path     string
	Bytes    int64
}

// BodyLimits lists every REST route that reads a JSON body, with the limit
// its handler reads it with: the limits reference's table of body limits (docs/reference/limits.md) is generated from
// it, and a test holds it to the OpenAPI documents and to the live routes.
func BodyLimits() []BodyLimit {
	api := func(method, path string, n int64) BodyLimit { return BodyLimit{false, method, path, n} }
	pay := func(method, path string, n int64) BodyLimit { return BodyLimit{true, method, path, n} }
	const p = PaymentsBasePath
	return []BodyLimit{
		api(http.MethodPost, "/v1/cigars/resolve", maxBodyBytes),
		api(http.MethodPost, "/v1/ai/cigars/fingerprint", maxPaidBody),
		api(http.MethodPost, "/v1/ai/cigars/fingerprint/recognize", maxFingerprintBytes),
		api(http.MethodPost, "/v1/ai/cigars/identify", maxPaidBody),
		api(http.MethodPost, "/v1/matches", maxPaidBody),
		api(http.MethodPost, "/v1/me/sessions", maxSessionBody),
		pay(http.MethodPost, p+"/billing-accounts/resolve", maxPaymentsBody),
		pay(http.MethodPost, p+"/billing-accounts/auto-reload", maxPaymentsBody),
		pay(http.MethodPost, p+"/offers", maxPaymentsBody),
		pay(http.MethodPost, p+"/payment-sessions", maxPaymentsBody),
		pay(http.MethodPost, p+"/merchant-accounts", maxPaymentsBody),
		pay(http.MethodPut, p+"/merchant-accounts/{id}/credentials", maxPaymentsBody),
		pay(http.MethodPost, p+"/payment-sessions/redeem", maxCheckoutBody),
		pay(http.MethodPost, p+"/payment-methods", maxCardBody),
		pay(http.MethodPost, p+"/purchase-intents/{id}/confirm", maxCheckoutBody),
		pay(http.MethodPost, PCIPath, maxCardBody),
	}
}
