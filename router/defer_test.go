package router_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// @defer is answered inline, as the incremental delivery proposal allows: one
// ordinary response holding every deferred part, whatever the label or if:
// the same data as the operation without @defer. Before, the engine planned a
// deferred operation the router could not run, and answered 500.
func TestDeferAnsweredInline(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	const (
		brand  = `{ brands(first: 1) { edges { node { id name } } } }`
		events = `events(first: 2) { edges { node { id name venue { name } } } } sessions(limit: 2) { count }`
	)
	for _, tt := range []struct {
		name, deferred, plain string
		vars                  map[string]any
	}{
		{"the issue's query", `{ brands(first:1) { edges { node { id ... @defer { name } } } } }`, brand, nil},
		{"in a list", `{ brands(first: 3) { edges { node { id ... @defer { name country } } } } }`,
			`{ brands(first: 3) { edges { node { id name country } } } }`, nil},
		{"label", `{ brands(first: 1) { edges { node { id ... @defer(label: "brandName") { name } } } } }`, brand, nil},
		{"if: false", `{ brands(first: 1) { edges { node { id ... @defer(if: false, label: "x") { name } } } } }`, brand, nil},
		{"if: true", `{ brands(first: 1) { edges { node { id ... @defer(if: true) { name } } } } }`, brand, nil},
		{"if: a variable, true", `query($d: Boolean!) { brands(first: 1) { edges { node { id ... @defer(if: $d) { name } } } } }`, brand, map[string]any{"d": true}},
		{"if: a variable, false", `query($d: Boolean!) { brands(first: 1) { edges { node { id ... @defer(if: $d) { name } } } } }`, brand, map[string]any{"d": false}},
		{"if: a variable left out", `query($d: Boolean = true) { brands(first: 1) { edges { node { id ... @defer(if: $d) { name } } } } }`, brand, nil},
		{"a fragment spread", `{ brands(first: 1) { edges { node { id ...N @defer(label: "n") } } } } fragment N on Brand { name }`, brand, nil},
		{"nested", `{ brands(first: 1) { edges { node { ... @defer(label: "outer") { id ... @defer(label: "inner") { name } } } } } }`, brand, nil},
		{"at the root", `{ ... @defer { brands(first: 1) { edges { node { id name } } } } }`, brand, nil},
		{"across subgraphs", `{ brands(first: 2) { edges { node { id name ... @defer(label: "feeds") { ` + events + ` } } } } }`,
			`{ brands(first: 2) { edges { node { id name ` + events + ` } } } }`, nil},
		{"on an interface", `{ brands(first: 1) { edges { node { id } } } node(id: "brd_1m1yv0dwrfkp4sak") { id ... on Brand @defer { name } } }`,
			`{ brands(first: 1) { edges { node { id } } } node(id: "brd_1m1yv0dwrfkp4sak") { id ... on Brand { name } } }`, nil},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				want := deferData(t, tr, srv, method, tt.plain, tt.vars)
				got := deferData(t, tr, srv, method, tt.deferred, tt.vars)
				sameJSON(t, got, want)
				if strings.Contains(tt.plain, " name ") && !strings.Contains(got, `"name"`) {
					t.Fatalf("no name in %s", got)
				}
			})
		}
	}
}

// deferData sends a query that must succeed over HTTP and returns its data.
func deferData(t *testing.T, tr *testRouter, srv *httptest.Server, method, query string, vars map[string]any) string {
	t.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	status, raw := tr.request(t, srv, method, body)
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || status != http.StatusOK || len(r.Errors) > 0 || string(r.Data) == "null" {
		t.Fatalf("%s %s: %d %s", method, query, status, raw)
	}
	return string(r.Data)
}

// What the router does not serve is a 400 with a code, never a 500: @stream
// (not in the schema), the engine's internal defer directive, and a label
// given twice. A deferred part counts against the limits like any other.
func TestDeferStreamRefusals(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	for _, tt := range []struct{ query, code string }{
		{`{ brands(first: 2) @stream(initialCount: 1) { edges { node { id } } } }`, limits.CodeValidationFailed},
		{`{ brands(first: 2) { edges @stream { node { id } } } }`, limits.CodeValidationFailed},
		{`{ brands(first: 1) { edges { node { id name @__defer_internal(id: 1) } } } }`, limits.CodeValidationFailed},
		{`{ brands(first: 1) { edges { node { ... @defer(label: "a") { id } ... @defer(label: "a") { name } } } } }`, limits.CodeValidationFailed},
		{`query($l: String) { brands(first: 1) { edges { node { ... @defer(label: $l) { id } } } } }`, limits.CodeValidationFailed},
		{`{ brands(first: 100) { edges { node { id ... @defer { cigars(first: 100) { edges { node { name } } } } } } } }`, limits.CodeCost},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			status, raw := tr.request(t, srv, method, map[string]any{"query": tt.query, "variables": map[string]any{"l": "x"}})
			var r gqlReply
			if err := json.Unmarshal(raw, &r); err != nil || status != http.StatusBadRequest || len(r.Errors) == 0 ||
				r.Errors[0].Extensions["code"] != tt.code {
				t.Errorf("%s %s: %d %s, want 400 %s", method, tt.query, status, raw, tt.code)
			}
		}
	}
}
