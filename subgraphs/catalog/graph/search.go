package graph

import (
	"context"

	"github.com/vitolahq/vitola/pagination"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/graph/model"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// searchCigars pages through the index's ranking with cursors bound to the query.
func (r *Resolver) searchCigars(ctx context.Context, query string, first int, after, brand *string) (*model.CigarConnection, error) {
	if n := len([]rune(query)); n < 2 || n > 200 {
		return nil, subgraph.BadInput(ctx, "query must be 2 to 200 characters")
	}
	if first < 1 || first > pagination.MaxSize {
		return nil, subgraph.BadInput(ctx, "first must be between 1 and 100")
	}
	ix := r.Search.Index()
	brandID := ""
	if brand != nil && *brand != "" {
		b, ok := ix.Brand(*brand)
		if !ok {
			return &model.CigarConnection{Edges: []*model.CigarEdge{}, PageInfo: &pagination.PageInfo{}}, nil
		}
		brandID = b.ID
	}
	qk := search.QueryKey(query, brandID)
	var pos *search.Position
	if after != nil && *after != "" {
		p, err := r.Cursors.Decode(qk, *after)
		if err != nil {
			return nil, subgraph.Invalid(ctx, "cursor", err.Error())
		}
		pos = &p
	}
	hits, more := ix.SearchPage(query, brandID, pos, first)
	conn := &model.CigarConnection{Edges: make([]*model.CigarEdge, len(hits)), PageInfo: &pagination.PageInfo{HasNextPage: more}}
	for i, h := range hits {
		cur := r.Cursors.Encode(qk, search.Position{Score: h.Score, ID: h.Cigar.ID})
		conn.Edges[i] = &model.CigarEdge{Cursor: cur, Node: h.Cigar}
		if more && i == len(hits)-1 {
			conn.PageInfo.EndCursor = &cur
		}
	}
	return conn, nil
}

// resolveCigar ranks candidates for imperfect text; see search.Index.Resolve for
// when the first is resolved.
func (r *Resolver) resolveCigar(ctx context.Context, text string, brand *string, limit int) (*model.CigarResolution, error) {
	if n := len([]rune(text)); n < 2 || n > 200 {
		return nil, subgraph.BadInput(ctx, "text must be 2 to 200 characters")
	}
	if limit < 1 || limit > 10 {
		return nil, subgraph.BadInput(ctx, "limit must be between 1 and 10")
	}
	hint := ""
	if brand != nil {
		hint = *brand
	}
	hits, resolved := r.Search.Index().Resolve(text, hint, limit)
	out := &model.CigarResolution{Resolved: resolved, Candidates: make([]*catalog.Cigar, len(hits))}
	for i, h := range hits {
		out.Candidates[i] = h.Cigar
	}
	if resolved {
		out.Match = hits[0].Cigar
	}
	return out, nil
}
