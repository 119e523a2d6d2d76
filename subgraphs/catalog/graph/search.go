package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/graph/model"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// searchResult is one page of a search with the cursor of each hit.
type searchResult struct {
	hits    []search.Hit
	cursors []string
	more    bool
}

// search runs one page of a search: the ranking and cursors both the GraphQL
// connection and the REST page show.
func (r *Resolver) search(ctx context.Context, query string, first int, after, brand *string) (*searchResult, error) {
	if n := len([]rune(query)); n < 2 || n > 200 {
		return nil, subgraph.BadInput(ctx, "query must be 2 to 200 characters")
	}
	if _, err := pagination.Size(&first); err != nil {
		return nil, subgraph.BadInput(ctx, err.Error())
	}
	ix := r.Search.Index()
	brandID := ""
	if brand != nil && *brand != "" {
		b, ok := ix.Brand(*brand)
		if !ok {
			return &searchResult{}, nil // no such brand: nothing matches
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
	res := &searchResult{hits: hits, more: more, cursors: make([]string, len(hits))}
	for i, h := range hits {
		res.cursors[i] = r.Cursors.Encode(qk, search.Position{Score: h.Score, ID: h.Cigar.ID})
	}
	return res, nil
}

func (res *searchResult) endCursor() *string {
	if !res.more || len(res.cursors) == 0 {
		return nil
	}
	return &res.cursors[len(res.cursors)-1]
}

// searchCigars is the public connection.
func (r *Resolver) searchCigars(ctx context.Context, query string, first int, after, brand *string) (*model.CigarConnection, error) {
	res, err := r.search(ctx, query, first, after, brand)
	if err != nil {
		return nil, err
	}
	conn := &model.CigarConnection{Edges: make([]*model.CigarEdge, len(res.hits)), PageInfo: &pagination.PageInfo{HasNextPage: res.more, EndCursor: res.endCursor()}}
	for i, h := range res.hits {
		conn.Edges[i] = &model.CigarEdge{Cursor: res.cursors[i], Node: h.Cigar}
	}
	return conn, nil
}

// searchPage renders the REST search page in one piece.
func (r *Resolver) searchPage(ctx context.Context, query string, first int, after, brand *string) (catalog.Document, error) {
	res, err := r.search(ctx, query, first, after, brand)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(600*len(res.hits) + 128)
	buf.WriteString(`{"data":[`)
	ix := r.Search.Index()
	for i, h := range res.hits {
		if i > 0 {
			buf.WriteByte(',')
		}
		doc, ok, err := ix.Document(h.Cigar.ID)
		if err != nil || !ok {
			return nil, fmt.Errorf("render %s: %v", h.Cigar.ID, err)
		}
		buf.Write(doc)
	}
	end, _ := json.Marshal(res.endCursor())
	fmt.Fprintf(&buf, `],"pagination":{"hasNextPage":%t,"endCursor":%s}}`, res.more, end)
	return catalog.Document(buf.Bytes()), nil
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
