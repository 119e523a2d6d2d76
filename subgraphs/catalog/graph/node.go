package graph

import (
	"context"
	"errors"

	"github.com/vitolahq/vitola/ids"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/graph/model"
)

// node answers node(id:) for every type of the graph: the catalog's own types in
// full, other subgraphs' types as key-only stubs that the router completes through
// their owners, and null for an ID of no known type. Each new Node type needs a
// case here and a stub in catalog.graphqls: composition does not warn when one is
// missing.
func (r *Resolver) node(ctx context.Context, id string) (model.Node, error) {
	prefix, ok := ids.Prefix(id)
	if !ok {
		return nil, nil
	}
	var (
		n   model.Node
		err error
	)
	switch prefix {
	case ids.Brand:
		n, err = asNode(r.Store.Brand(ctx, id))
	case ids.Cigar:
		n, err = asNode(r.Store.Cigar(ctx, id))
	case ids.Product:
		n, err = asNode(r.Store.Product(ctx, id))
	case ids.Venue:
		n = &model.Venue{ID: id}
	case ids.Event:
		n = &model.Event{ID: id}
	case ids.User:
		n = &model.User{ID: id}
	}
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	return n, err
}

func asNode[T model.Node](v T, err error) (model.Node, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
