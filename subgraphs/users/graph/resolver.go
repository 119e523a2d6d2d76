// Package graph is the users subgraph's GraphQL API (gqlgen, Federation v2).
package graph

import (
	"context"
	"errors"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	"github.com/vitolahq/vitola/trust"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Store users.Store
	OAuth oauth.Store
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(store users.Store, keys oauth.Store) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Store: store, OAuth: keys}}))
}

// connectedUser returns the caller when it acts for a user with scope. The
// subgraph checks this itself, from the identity in the internal token: the
// edge's check is not the only wall.
func (r *Resolver) connectedUser(ctx context.Context, scope string) (trust.Identity, error) {
	caller, _ := trust.FromContext(ctx)
	if caller.UserID == "" {
		return caller, &gqlerror.Error{Message: "this field needs an OAuth access token: send Authorization: Bearer <token>", Path: graphql.GetPath(ctx),
			Extensions: map[string]any{"code": "UNAUTHENTICATED"}}
	}
	if !caller.HasScope(scope) {
		return caller, &gqlerror.Error{Message: "the access token lacks the " + scope + " scope", Path: graphql.GetPath(ctx),
			Extensions: map[string]any{"code": "INSUFFICIENT_SCOPE", "scope": scope}}
	}
	return caller, nil
}

// ownUser returns a user's full profile (for the user itself): everything but
// the password hash; the email resolver decides on the email.
func (r *Resolver) ownUser(ctx context.Context, id string) (*users.User, error) {
	u, err := r.Store.User(ctx, id)
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	own := *u
	own.PasswordHash = ""
	return &own, nil
}

// publicUser returns the user as anyone may see it: a private profile keeps only
// its id and display name.
func (r *Resolver) publicUser(ctx context.Context, id string) (*users.User, error) {
	u, err := r.Store.User(ctx, id)
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if u.Private {
		return &users.User{ID: u.ID, DisplayName: u.DisplayName, CreatedAt: u.CreatedAt}, nil
	}
	pub := *u
	pub.Email, pub.PasswordHash = "", ""
	return &pub, nil
}
