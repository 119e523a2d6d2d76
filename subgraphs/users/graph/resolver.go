// Package graph is the users subgraph's GraphQL API (gqlgen, Federation v2).
package graph

import (
	"context"
	"errors"
	"net/http"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Store users.Store
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(store users.Store) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Store: store}}))
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
