// Package restshim is the public HTTP edge: every REST route of the spec, /health,
// /docs, and /graphql handed to the router. It validates HTTP, calls internal
// operations and maps results; domain rules live in the subgraphs.
package restshim

import (
	"context"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Check is one component or store /health/ready reports on.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps is what the shim needs.
type Deps struct {
	// GraphQL serves /graphql: the router in process, or a proxy to it.
	GraphQL http.Handler
	// Keys checks developer keys; Origins answers CORS preflights.
	Keys    KeyChecker
	Origins OriginChecker
	// Router runs federated operations (its transport signs the shim's
	// internal token with the caller's identity).
	Router *subgraph.Client
	// Catalog, Users and Payments call those subgraphs.
	Catalog  *subgraph.Client
	Users    *subgraph.Client
	Payments *subgraph.Client
	Matching *subgraph.Client
	// Idempotency records paid requests (in the access store).
	Idempotency *idempotency.Service
	// Tokens verifies OAuth access tokens.
	Tokens *access.Tokens
	// PublicURL is the API's public base URL (the OAuth issuer); CookieKey signs
	// the OAuth pages' CSRF and session cookies.
	PublicURL string
	CookieKey []byte
	// KV counts sign-in attempts (shared by replicas when it is Redis).
	KV kv.Store
	// Quotas spends developer keys' request quotas (nil: none).
	Quotas *access.Quotas
	// OpenAPI is the document /docs renders; PaymentsOpenAPI the payments
	// origin's.
	OpenAPI         []byte
	PaymentsOpenAPI []byte
	// PaymentsPublicURL is {payments_origin} as clients and browsers reach it.
	PaymentsPublicURL string
	// Checks are what /health/ready reports, each within ReadyTimeout (0:
	// DefaultReadyTimeout); OnCheckFailed, when set, is told each failure
	// (the platform counts them).
	Checks        []Check
	ReadyTimeout  time.Duration
	OnCheckFailed func(name string)
	Logger        zerolog.Logger
}

// NewServer returns the public API handler ({base_url}). Every error it
// answers is the platform's JSON (edge); serve it through Listener so that
// net/http's own refusals are too.
func NewServer(d Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(routes{mux}, d)
	return withRecovery(d.Logger, edge(mux))
}

// NewPaymentsServer returns the payments origin's handler ({payments_origin}),
// with the same edge.
func NewPaymentsServer(d Deps) http.Handler {
	mux := http.NewServeMux()
	addPaymentsRoutes(routes{mux}, d)
	return withRecovery(d.Logger, edge(mux))
}
