// Package graph is the catalog subgraph's GraphQL API (gqlgen, Federation v2).
package graph

import (
	"context"
	"errors"
	"net/http"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Store   catalog.Store
	Search  *search.Live
	Cursors *search.Cursors
	// Prober checks node(id:) IDs of types other subgraphs own; nil skips the
	// check (node then returns the key stub unverified).
	Prober Prober
}

// Prober reports whether another subgraph's entity exists.
type Prober interface {
	Exists(ctx context.Context, typename, id string) (bool, error)
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(r *Resolver) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: r}))
}

// notFoundAsNil turns a missing object into GraphQL null.
func notFoundAsNil[T any](v *T, err error) (*T, error) {
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// byID is the keyset position of an item of a list ordered by ID.
func byID[T interface{ GetID() string }](v T) []string { return []string{v.GetID()} }
