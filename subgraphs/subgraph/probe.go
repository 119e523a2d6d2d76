package subgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// EntityProber asks the subgraph that owns a type whether an entity exists, with
// an internal _entities call. The catalog's node(id:) uses it so that an unknown
// ID of another subgraph's type is a clean null, not a stub that fails later.
type EntityProber struct {
	// Client carries the internal token (a trust.Transport).
	Client *http.Client
	// URLs maps a type name to its owning subgraph's /graphql URL.
	URLs map[string]string
}

const probeQuery = `query($r: [_Any!]!) { _entities(representations: $r) { __typename } }`

// Exists reports whether the owner of typename knows the entity id. A type with no
// configured owner is assumed to exist.
func (p *EntityProber) Exists(ctx context.Context, typename, id string) (bool, error) {
	url, ok := p.URLs[typename]
	if !ok {
		return true, nil
	}
	body, _ := json.Marshal(map[string]any{
		"query":     probeQuery,
		"variables": map[string]any{"r": []map[string]string{{"__typename": typename, "id": id}}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := p.Client.Do(req)
	if err != nil {
		return false, fmt.Errorf("probe %s: %w", typename, err)
	}
	defer res.Body.Close()
	var out struct {
		Data struct {
			Entities []json.RawMessage `json:"_entities"`
		} `json:"data"`
	}
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("probe %s: owner answered %d", typename, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return false, fmt.Errorf("probe %s: %w", typename, err)
	}
	return len(out.Data.Entities) == 1 && string(out.Data.Entities[0]) != "null", nil
}
