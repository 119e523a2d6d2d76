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

// events answers every events connection of the subgraph; cursors are bound
// to the field and its filter.
func (r *Resolver) events(ctx context.Context, field string, f venues.EventFilter, a pagination.Args) (*model.EventConnection, error) {
	edges, info, err := subgraph.Connection(ctx, a, pagination.Keyed(2, field, f.VenueID, f.BrandID),
		func(p venues.Page) ([]*venues.Event, error) { return r.Store.Events(ctx, f, p) }, venues.EventPosition,
		func(cur string, e *venues.Event) *model.EventEdge { return &model.EventEdge{Cursor: cur, Node: e} })
	if err != nil {
		return nil, err
	}
	return &model.EventConnection{Edges: edges, PageInfo: info}, nil
}
