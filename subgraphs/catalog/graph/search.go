package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/graph/model"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// window is a validated page of a search: its size and direction, and the
// positions of its cursors.
type window struct {
	search.Window
	qk string
}

// searchWindow validates a search and its paging arguments. found is false
// for a brand that does not exist (nothing matches).
func (r *Resolver) searchWindow(ctx context.Context, query string, a pagination.Args, brand *string) (w window, brandID string, found bool, err error) {
	if n := len([]rune(query)); n < 2 || n > 200 {
		return w, "", false, subgraph.BadInput(ctx, "query must be 2 to 200 characters")
	}
	if w.N, w.Backward, err = pagination.Direction(a); err != nil {
		return w, "", false, subgraph.PageError(ctx, err)
	}
	if brand != nil && *brand != "" {
		b, ok := r.Search.Index().Brand(*brand)
		if !ok {
			return w, "", false, nil
		}
		brandID = b.ID
	}
	w.qk = search.QueryKey(query, brandID)
	for _, c := range []struct {
		cursor *string
		pos    **search.Position
	}{{a.After, &w.After}, {a.Before, &w.Before}} {
		if c.cursor != nil && *c.cursor != "" {
			p, err := r.Cursors.Decode(w.qk, *c.cursor)
			if err != nil {
				return w, "", false, subgraph.Invalid(ctx, "cursor", err.Error())
			}
			*c.pos = &p
		}
	}
	return w, brandID, true, nil
}

func (r *Resolver) hitCursor(qk string) func(h search.Hit) string {
	return func(h search.Hit) string {
		return r.Cursors.Encode(qk, search.Position{Score: h.Score, ID: h.Cigar.ID})
	}
}

// searchCigars is the public connection: forwards or backwards over one
// query's ranking, with cursors bound to the query.
func (r *Resolver) searchCigars(ctx context.Context, query string, a pagination.Args, brand *string) (*model.CigarConnection, error) {
	w, brandID, found, err := r.searchWindow(ctx, query, a, brand)
	if err != nil {
		return nil, err
	}
	var hits []search.Hit
	if found {
		hits = r.Search.Index().SearchWindow(query, brandID, w.Window)
	}
	// Edges needs only the size and direction; the bounds were applied above.
	req := pagination.Request{Size: w.N, Backward: w.Backward}
	if w.After != nil {
		req.After = []string{}
	}
	if w.Before != nil {
		req.Before = []string{}
	}
	edges, info := pagination.Edges(hits, req, r.hitCursor(w.qk),
		func(cur string, h search.Hit) *model.CigarEdge { return &model.CigarEdge{Cursor: cur, Node: h.Cigar} })
	return &model.CigarConnection{Edges: edges, PageInfo: info}, nil
}

// searchPage renders the REST search page in one piece: forwards only, with
// the REST pagination object (endCursor null on the last page).
func (r *Resolver) searchPage(ctx context.Context, query string, first int, after, brand *string) (catalog.Document, error) {
	w, brandID, found, err := r.searchWindow(ctx, query, pagination.Args{First: &first, After: after}, brand)
	if err != nil {
		return nil, err
	}
	// One snapshot for the hits and their documents.
	ix := r.Search.Index()
	var hits []search.Hit
	if found {
		hits = ix.SearchWindow(query, brandID, w.Window)
	}
	more := len(hits) > w.N
	if more {
		hits = hits[:w.N]
	}
	var end *string
	if more {
		c := r.hitCursor(w.qk)(hits[len(hits)-1])
		end = &c
	}
	endJSON, _ := json.Marshal(end)
	// gqlgen copies the page into its response: it is rendered in a buffer
	// lent until then.
	buf := append(subgraph.Scratch(ctx, 600*len(hits)+128), `{"data":[`...)
	for i, h := range hits {
		if i > 0 {
			buf = append(buf, ',')
		}
		doc, ok, err := ix.Document(h.Cigar.ID)
		if err != nil || !ok {
			return nil, fmt.Errorf("render %s: %v", h.Cigar.ID, err)
		}
		buf = append(buf, doc...)
	}
	buf = append(buf, `],"pagination":{"hasNextPage":`...)
	buf = strconv.AppendBool(buf, more)
	buf = append(append(append(buf, `,"endCursor":`...), endJSON...), `}}`...)
	return catalog.Document(buf), nil
}

// resolveCigar ranks candidates for imperfect text; see search.Index.Resolve for
// when the first is resolved.
func (r *Resolver) resolveCigar(ctx context.Context, text string, brand *string, limit int) (*model.CigarResolution, error) {
	_, hits, resolved, err := r.resolve(ctx, text, brand, limit)
	if err != nil {
		return nil, err
	}
	out := &model.CigarResolution{Resolved: resolved, Candidates: make([]*catalog.Cigar, len(hits))}
	for i, h := range hits {
		out.Candidates[i] = h.Cigar
	}
	if resolved {
		out.Match = hits[0].Cigar
	}
	return out, nil
}

// resolvePage renders resolveCigar's answer as the REST resolve route's body,
// in one piece: {resolved, match, candidates}.
func (r *Resolver) resolvePage(ctx context.Context, text string, brand *string, limit int) (catalog.Document, error) {
	ix, hits, resolved, err := r.resolve(ctx, text, brand, limit)
	if err != nil {
		return nil, err
	}
	docs := make([]catalog.Document, len(hits))
	size := 64
	for i, h := range hits {
		d, ok, err := ix.Document(h.Cigar.ID)
		if err != nil || !ok {
			return nil, fmt.Errorf("render %s: %v", h.Cigar.ID, err)
		}
		docs[i] = d
		size += len(d) + 1
	}
	// gqlgen copies the body into its response: it is rendered in a buffer
	// lent until then.
	buf := append(subgraph.Scratch(ctx, 2*size), `{"resolved":`...)
	buf = strconv.AppendBool(buf, resolved)
	buf = append(buf, `,"match":`...)
	if resolved {
		buf = append(buf, docs[0]...)
	} else {
		buf = append(buf, "null"...)
	}
	buf = append(buf, `,"candidates":[`...)
	for i, d := range docs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, d...)
	}
	return catalog.Document(append(buf, "]}"...)), nil
}

// resolve checks a resolve's arguments and resolves the text on one index
// snapshot, which it returns for rendering the hits.
func (r *Resolver) resolve(ctx context.Context, text string, brand *string, limit int) (*search.Index, []search.Hit, bool, error) {
	if n := len([]rune(text)); n < 2 || n > 200 {
		return nil, nil, false, subgraph.BadInput(ctx, "text must be 2 to 200 characters")
	}
	if limit < 1 || limit > 10 {
		return nil, nil, false, subgraph.BadInput(ctx, "limit must be between 1 and 10")
	}
	hint := ""
	if brand != nil {
		hint = *brand
	}
	ix := r.Search.Index()
	hits, resolved := ix.Resolve(text, hint, limit)
	return ix, hits, resolved, nil
}
