// Package subgraph holds what every subgraph server shares: the gqlgen server
// set-up and the HTTP shape of a subgraph component (GraphQL behind the
// internal-token check, plus /health and /health/ready).
package subgraph

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/timestamp"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/pagination"

	"github.com/vitolahq/vitola/internal/trust"
)

// NewGraphQLServer serves an executable schema over POST (and subscriptions
// over SSE: stream.go) with parsed-query caching. Introspection is on because
// federation's _service needs it; only the router and the shim can reach a
// subgraph at all.
func NewGraphQLServer(es graphql.ExecutableSchema) http.Handler {
	srv := handler.New(es)
	// SSE first: its requests are JSON POSTs too, told apart by their Accept.
	srv.AddTransport(sse{transport.SSE{KeepAlivePingInterval: SSEKeepAlive}})
	srv.AddTransport(internalPOST{})
	srv.Use(streamErrors{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	return srv
}

// Pinger is a store /health/ready checks.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Route is a subgraph's own HTTP route beside /graphql (the payments
// subgraph's card route, which keeps raw card data out of GraphQL).
type Route struct {
	Pattern string
	Handler http.Handler
}

// Handler is a subgraph component's HTTP surface: POST /graphql and its own
// routes behind the internal-token check; an anonymous GET /health
// (liveness: the process serves) and GET /health/ready (its store answers,
// within the store's own bound).
func Handler(name string, gql http.Handler, verifier *trust.Verifier, store Pinger, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /graphql", trust.Require(verifier, gql))
	for _, r := range routes {
		mux.Handle(r.Pattern, trust.Require(verifier, r.Handler))
	}
	answer := func(w http.ResponseWriter, code int, status string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"status": status, "component": name, "time": timestamp.Format(time.Now())})
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		answer(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, r *http.Request) {
		if err := store.Ping(r.Context()); err != nil {
			answer(w, http.StatusServiceUnavailable, "unavailable")
			return
		}
		answer(w, http.StatusOK, "ok")
	})
	return mux
}

// BadInput is the GraphQL error for an argument that breaks a rule; msg says
// which and how to fix it.
func BadInput(ctx context.Context, msg string) error {
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
}

// Invalid is the GraphQL error for a malformed value of a named kind: its code is
// INVALID_<WHAT> (INVALID_CURSOR), which the REST shim maps to a 400 invalid_<what>.
func Invalid(ctx context.Context, what, msg string) error {
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: map[string]any{"code": "INVALID_" + strings.ToUpper(what)}}
}

// Page validates a connection's paging arguments for the list l as a GraphQL
// error: a size or a first-and-last refusal is BAD_USER_INPUT, a cursor that is
// not one of l's INVALID_CURSOR.
func Page(ctx context.Context, a pagination.Args, l pagination.List) (pagination.Request, error) {
	req, err := pagination.Parse(a, l)
	return req, PageError(ctx, err)
}

// Connection answers a connection over a keyset list: it validates the
// arguments, reads the page with read (which returns what Request.Keyset
// selects), and makes the edges and page info.
func Connection[T, E any](ctx context.Context, a pagination.Args, l pagination.List, read func(pagination.Request) ([]T, error),
	position func(T) []string, edge func(cursor string, item T) E) ([]E, *pagination.PageInfo, error) {
	req, err := Page(ctx, a, l)
	if err != nil {
		return nil, nil, err
	}
	items, err := read(req)
	if err != nil {
		return nil, nil, err
	}
	edges, info := pagination.Edges(items, req, func(it T) string { return req.Cursor(position(it)...) }, edge)
	return edges, info, nil
}

// PageError maps a pagination error to its GraphQL error (nil stays nil).
func PageError(ctx context.Context, err error) error {
	var ce *pagination.CursorError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return Invalid(ctx, "cursor", err.Error())
	default:
		return BadInput(ctx, err.Error())
	}
}
