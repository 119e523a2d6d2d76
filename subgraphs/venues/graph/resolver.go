// Package graph is the venues subgraph's GraphQL API (gqlgen, Federation v2).
package graph

import (
	"context"
	"errors"
	"net/http"

	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/venues"
	"github.com/vitolahq/vitola/subgraphs/venues/graph/model"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Store venues.Store
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(store venues.Store) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Store: store}}))
}

func notFoundAsNil[T any](v *T, err error) (*T, error) {
	if errors.Is(err, venues.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// events answers every events connection of the subgraph.
func (r *Resolver) events(ctx context.Context, f venues.EventFilter, first *int, after *string) (*model.EventConnection, error) {
	req, err := subgraph.Page(ctx, first, after)
	if err != nil {
		return nil, err
	}
	es, err := r.Store.Events(ctx, f, venues.Page{First: req.Size, After: req.Position})
	if err != nil {
		return nil, err
	}
	edges, info := pagination.Edges(es, req, venues.EventPosition,
		func(cur string, e *venues.Event) *model.EventEdge { return &model.EventEdge{Cursor: cur, Node: e} })
	return &model.EventConnection{Edges: edges, PageInfo: info}, nil
}
