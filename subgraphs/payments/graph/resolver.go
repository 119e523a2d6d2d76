// Package graph is the payments subgraph's internal GraphQL API (gqlgen). Only
// the shim calls it; every field acts for the developer key named in the
// internal token, never for a key given as an argument.
package graph

import (
	"context"
	"errors"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Ledger payments.Ledger
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(ledger payments.Ledger) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Ledger: ledger}}))
}

// Error codes of the API (extensions.code).
const (
	CodeInsufficientCredits = "INSUFFICIENT_CREDITS"
	CodeNotFound            = "NOT_FOUND"
	CodeClosed              = "RESERVATION_CLOSED"
	CodeBadAmount           = "BAD_USER_INPUT"
	CodeForbidden           = "FORBIDDEN"
)

// maxLookback bounds creditReservation's withinSeconds: a week, longer than
// any idempotency record lives.
const maxLookback = 7 * 24 * 3600

// caller is the developer key the call acts for: only the shim, acting for a
// key, may move credits.
func caller(ctx context.Context) (string, error) {
	id, _ := trust.FromContext(ctx)
	if id.Caller != "shim" || id.KeyID == "" {
		return "", fail(ctx, CodeForbidden, "credits are moved only by the shim, for a developer key", nil)
	}
	return id.KeyID, nil
}

func fail(ctx context.Context, code, msg string, ext map[string]any) error {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: e}
}

// ledgerError gives the ledger's errors their codes; others stay internal.
func ledgerError(ctx context.Context, err error, a *payments.Account) error {
	switch {
	case errors.Is(err, payments.ErrInsufficientCredits):
		var balance int64
		if a != nil {
			balance = a.Balance
		}
		return fail(ctx, CodeInsufficientCredits, err.Error(), map[string]any{"balance": balance})
	case errors.Is(err, payments.ErrNotFound):
		return fail(ctx, CodeNotFound, "no such reservation for this key", nil)
	case errors.Is(err, payments.ErrClosed):
		return fail(ctx, CodeClosed, err.Error(), nil)
	case errors.Is(err, payments.ErrBadAmount):
		return fail(ctx, CodeBadAmount, err.Error(), nil)
	}
	return err
}
