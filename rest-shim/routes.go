package restshim

import (
	"net/http"
	"strings"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/examples"
	"github.com/vitolahq/vitola/webui"
)

// addRoutes lists every route of {base_url}.
func addRoutes(mux routes, d Deps) {
	mux.Handle("GET /health", HealthHandler())
	mux.Handle("GET /health/ready", ReadyHandler(d.Checks, d.ReadyTimeout, d.OnCheckFailed))
	mux.Handle("/docs", webui.DocsHandler(d.OpenAPI))
	mux.Handle("/docs/", webui.DocsHandler(d.OpenAPI))
	mux.Handle("/graphql", d.GraphQL)
	mux.Handle("/graphql/assets/", d.GraphQL)
	mux.Handle("GET "+examples.Path, examples.Handler())

	key := func(h http.Handler) http.Handler { return requireKey(d.Keys, d.Logger, keyRule{Quotas: d.Quotas}, h) }
	mux.Handle("GET /v1/cigars/search", key(handleSearchCigars(d.Catalog, d.Logger)))
	mux.Handle("POST /v1/cigars/resolve", key(handleResolveCigar(d.Catalog, d.Logger)))
	mux.Handle("GET /v1/cigars/{id}", key(getOne(d.Catalog, d.Logger, opCigar, "cigar", "id", "id", "cigar_not_found", "cigar")))
	mux.Handle("GET /v1/products/barcode/{barcode}", key(getOne(d.Catalog, d.Logger, opProductByBarcode, "productByBarcode", "barcode", "code", "product_not_found", "published product")))
	mux.Handle("GET /v1/me", key(handleMe(d.Tokens, d.Users, d.Logger)))
	mux.Handle("POST /v1/me/sessions", key(handleStartSession(d.Tokens, d.Users, d.Router, d.Logger)))
	// Image matching: fingerprints are paid (api.ai, Idempotency-Key, credits);
	// recognizing one against stored evidence is free.
	ai := func(h http.Handler) http.Handler {
		return requireKey(d.Keys, d.Logger, keyRule{Entitlement: access.EntitlementAI, Quotas: d.Quotas}, h)
	}
	mux.Handle("POST /v1/ai/cigars/fingerprint", ai(handlePaid(d.Payments, d.Idempotency, fingerprintRoute(d.Matching), d.Logger)))
	mux.Handle("POST /v1/ai/cigars/fingerprint/recognize", key(handleRecognize(d.Matching, d.Catalog, d.Logger)))
	identify := ai(handlePaid(d.Payments, d.Idempotency, identifyRoute(d.Matching), d.Logger))
	mux.Handle("POST /v1/ai/cigars/identify", identify)
	// The spec lists /v1/matches both as reserved (501) and as an alias of
	// identify; it is the alias here (docs/guides/image-matching.md).
	mux.Handle("POST /v1/matches", identify)
	// The public feeds: websites call them with publishable keys.
	feedKey := func(h http.Handler) http.Handler {
		return requireKey(d.Keys, d.Logger, keyRule{Public: true, Quotas: d.Quotas}, h)
	}
	mux.Handle("GET /venues/{id}/sessions", feedKey(handleBusinessSessions(d.Router, opVenueFeed, "venue", d.Logger)))
	mux.Handle("GET /brands/{id}/sessions", feedKey(handleBusinessSessions(d.Router, opBrandFeed, "brand", d.Logger)))
	mux.Handle("OPTIONS /venues/{id}/sessions", handlePreflight(d.Origins, d.Logger))
	mux.Handle("OPTIONS /brands/{id}/sessions", handlePreflight(d.Origins, d.Logger))
	mux.Handle("GET /.well-known/jwks.json", handleJWKS(d.Users, d.Logger))

	// The OAuth authorization server: anonymous (browsers and OAuth clients send
	// no developer key).
	o := &oauthHandlers{users: d.Users, key: d.CookieKey, log: d.Logger, issuer: d.PublicURL, signIns: newSignInLimits(d.KV)}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", o.metadata)
	mux.HandleFunc("GET /oauth/authorize", o.authorize)
	mux.HandleFunc("POST /oauth/login", o.login)
	mux.HandleFunc("POST /oauth/consent", o.consent)
	mux.HandleFunc("POST /oauth/token", o.token)
	mux.HandleFunc("POST /oauth/revoke", o.revoke)
	mux.Handle("GET /v1/products/{id}", key(getOne(d.Catalog, d.Logger, opProduct, "product", "id", "id", "product_not_found", "published product")))
}

// addPaymentsRoutes lists every route of {payments_origin}.
func addPaymentsRoutes(mux routes, d Deps) {
	mux.Handle("GET /health", HealthHandler())
	mux.Handle("GET /health/ready", ReadyHandler(d.Checks, d.ReadyTimeout, d.OnCheckFailed))
	mux.Handle("/docs", webui.DocsHandler(d.PaymentsOpenAPI))
	mux.Handle("/docs/", webui.DocsHandler(d.PaymentsOpenAPI))

	// The payments API for trusted backends: a service client's secret and ID.
	p := &paymentsAPI{client: d.Payments, idem: d.Idempotency, publicURL: d.PaymentsPublicURL, log: d.Logger, auths: newClientAuths()}
	trusted := func(pattern string, h http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.Handle(method+" "+PaymentsBasePath+path, p.requireClient(h))
	}
	trusted("POST /billing-accounts/resolve", p.resolveAccount)
	trusted("POST /billing-accounts/auto-reload", p.autoReload)
	trusted("GET /offers", p.listOffers)
	trusted("POST /offers", p.createOffer)
	trusted("POST /payment-sessions", p.createSession)
	trusted("GET /payment-sessions/{id}/status", p.sessionStatus)
	trusted("GET /merchant-accounts", p.listMerchants)
	trusted("POST /merchant-accounts", p.createMerchant)
	trusted("PUT /merchant-accounts/{id}/credentials", p.setCredentials)
	trusted("DELETE /merchant-accounts/{id}/credentials", p.revokeCredentials)

	// The hosted checkout: a browser with the action cookie of a redeemed
	// session (see checkout.go).
	c := newCheckoutAPI(p, d.CookieKey)
	mux.HandleFunc("POST "+PaymentsBasePath+"/payment-sessions/redeem", c.redeem)
	mux.HandleFunc("GET "+PaymentsBasePath+"/payment-sessions/current", c.session(c.current))
	mux.HandleFunc("POST "+PaymentsBasePath+"/payment-sessions/current/cancel", c.session(c.cancel))
	mux.HandleFunc("GET "+PaymentsBasePath+"/payment-methods", c.session(c.listMethods))
	mux.HandleFunc("POST "+PaymentsBasePath+"/payment-methods", c.session(c.addMethod))
	mux.HandleFunc("PATCH "+PaymentsBasePath+"/payment-methods/{id}/default", c.session(c.setDefault))
	mux.HandleFunc("DELETE "+PaymentsBasePath+"/payment-methods/{id}", c.session(c.deleteMethod))
	mux.HandleFunc("POST "+PaymentsBasePath+"/purchase-intents/{id}/confirm", c.session(c.confirm))
	// The only route that accepts raw card data.
	mux.HandleFunc("POST "+PCIPath, c.session(c.pci))
	// The hosted checkout page, framed only by the session's client's
	// registered origins.
	page := webui.CheckoutHandler(c.frameOrigins)
	mux.Handle("GET "+HostedCheckoutPath+"/{id}", page)
	mux.Handle("GET "+HostedCheckoutPath+"/assets/{file}", page)
}
