package matcher

import (
	"context"

	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// CatalogClient asks the catalog subgraph over its internal GraphQL API (the
// client's transport carries matching's internal token).
type CatalogClient struct{ Client *subgraph.Client }

var (
	opResolve = subgraph.MustParse(`query IdentifyResolve($text: String!, $limit: Int!) {
  resolveCigar(text: $text, limit: $limit) { resolved candidates { id name catalogNumber brand { name } } } }`)
	opCigars = subgraph.MustParse(`query IdentifyCigars($r: [_Any!]!) {
  _entities(representations: $r) { ... on Cigar { id name catalogNumber brand { name } } } }`)
	// CatalogOperations are checked against the catalog's schema by a test.
	CatalogOperations = []*subgraph.Operation{opResolve, opCigars}
)

type cigarJSON struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CatalogNumber int    `json:"catalogNumber"`
	Brand         struct {
		Name string `json:"name"`
	} `json:"brand"`
}

func (c cigarJSON) cigar() identify.Cigar {
	return identify.Cigar{ID: c.ID, Number: c.CatalogNumber, Brand: c.Brand.Name, Name: c.Name}
}

func (c CatalogClient) Resolve(ctx context.Context, text string, limit int) (*identify.TextResult, error) {
	var out struct {
		ResolveCigar struct {
			Resolved   bool
			Candidates []cigarJSON
		}
	}
	if err := c.Client.Do(ctx, opResolve, map[string]any{"text": text, "limit": limit}, &out); err != nil {
		return nil, err
	}
	res := &identify.TextResult{Resolved: out.ResolveCigar.Resolved}
	for _, cj := range out.ResolveCigar.Candidates {
		res.Candidates = append(res.Candidates, cj.cigar())
	}
	return res, nil
}

func (c CatalogClient) Cigars(ctx context.Context, ids []string) (map[string]identify.Cigar, error) {
	out := map[string]identify.Cigar{}
	if len(ids) == 0 {
		return out, nil
	}
	reps := make([]map[string]any, len(ids))
	for i, id := range ids {
		reps[i] = map[string]any{"__typename": "Cigar", "id": id}
	}
	var got struct {
		Entities []*cigarJSON `json:"_entities"`
	}
	if err := c.Client.Do(ctx, opCigars, map[string]any{"r": reps}, &got); err != nil {
		return nil, err
	}
	for _, cj := range got.Entities {
		if cj != nil && cj.ID != "" {
			out[cj.ID] = cj.cigar()
		}
	}
	return out, nil
}
