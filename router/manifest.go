package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/vitolahq/vitola/access"
)

// ApolloManifestFormat is the format field of Apollo's persisted query
// manifest (@apollo/generate-persisted-query-manifest).
const ApolloManifestFormat = "apollo-persisted-query-manifest"

// ParseManifest reads a client's manifest of trusted documents, in any of the
// formats client build tools write:
//   - Relay (relay-compiler's persistConfig) and GraphQL Code Generator's
//     client preset (persisted-documents.json): one JSON object mapping each
//     document's ID to its text, {"<id>": "<text>"};
//   - Apollo's persisted query manifest: {"format":
//     "apollo-persisted-query-manifest", "version": 1, "operations": [{"id",
//     "name", "type", "body"}]}.
//
// Every document needs an ID and a text; an ID twice with two texts is an
// error. Documents come back in ID order, each with the SHA-256 of its text.
// Whether a document is valid against the schema is checked when it runs
// (once: its verdict is kept), as for any operation.
func ParseManifest(raw []byte) ([]access.Document, error) {
	raw = bytes.TrimSpace(raw)
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, errors.New("a manifest is one JSON object: Relay's or GraphQL Code Generator's {\"<id>\": \"<text>\"}, or Apollo's persisted query manifest")
	}
	byID := map[string]access.Document{}
	put := func(id, body, name string) error {
		if strings.TrimSpace(id) == "" || strings.TrimSpace(body) == "" {
			return errors.New("every document needs an ID and a text")
		}
		if have, ok := byID[id]; ok && have.Body != body {
			return fmt.Errorf("the ID %q is given twice with two texts", id)
		}
		byID[id] = access.Document{ID: id, SHA256: access.DocumentHash(body), Body: body, Name: name}
		return nil
	}
	if f, ok := probe["format"]; ok {
		var m struct {
			Format     string `json:"format"`
			Version    int    `json:"version"`
			Operations []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
				Type string `json:"type"`
				Body string `json:"body"`
			} `json:"operations"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Format != ApolloManifestFormat {
			return nil, fmt.Errorf("unknown manifest format %s (want %q, or a map of IDs to texts)", f, ApolloManifestFormat)
		}
		if m.Version != 1 {
			return nil, fmt.Errorf("version %d of the Apollo persisted query manifest: only version 1 is known", m.Version)
		}
		for i, op := range m.Operations {
			if err := put(op.ID, op.Body, op.Name); err != nil {
				return nil, fmt.Errorf("operations[%d]: %w", i, err)
			}
		}
	} else {
		for id, v := range probe {
			var body string
			if err := json.Unmarshal(v, &body); err != nil {
				return nil, fmt.Errorf("%q: a document's text must be a string", id)
			}
			if err := put(id, body, ""); err != nil {
				return nil, fmt.Errorf("%q: %w", id, err)
			}
		}
	}
	if len(byID) == 0 {
		return nil, errors.New("the manifest holds no document")
	}
	out := make([]access.Document, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
