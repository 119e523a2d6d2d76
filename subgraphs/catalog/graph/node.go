package graph

import (
	"context"
	"errors"

	"github.com/vitolahq/vitola/internal/ids"
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
		n, err = r.foreign(ctx, "Venue", id, &model.Venue{ID: id})
	case ids.Event:
		n, err = r.foreign(ctx, "Event", id, &model.Event{ID: id})
	case ids.User:
		n, err = r.foreign(ctx, "User", id, &model.User{ID: id})
	case ids.Collection:
		// The users subgraph answers a user's own data only to its owner with
		// the data's scope: the probe carries the caller's identity.
		n, err = r.foreign(ctx, "Collection", id, &model.Collection{ID: id})
	case ids.Humidor:
		n, err = r.foreign(ctx, "Humidor", id, &model.Humidor{ID: id})
	case ids.SmokeSession:
		n, err = r.foreign(ctx, "SmokeSession", id, &model.SmokeSession{ID: id})
	case ids.CheckIn:
		n, err = r.foreign(ctx, "CheckIn", id, &model.CheckIn{ID: id})
	}
	if errors.Is(err, catalog.ErrNotFound) {
		return nil, nil
	}
	return n, err
}

// foreign returns the stub of another subgraph's entity once its owner confirms
// it exists: a stub for an unknown ID would make the router report a misleading
// non-null error instead of node: null.
func (r *Resolver) foreign(ctx context.Context, typename, id string, stub model.Node) (model.Node, error) {
	if r.Prober == nil {
		return stub, nil
	}
	ok, err := r.Prober.Exists(ctx, typename, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, catalog.ErrNotFound
	}
	return stub, nil
}

func asNode[T model.Node](v T, err error) (model.Node, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
