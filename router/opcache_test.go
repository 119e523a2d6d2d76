package router_test

import (
	"net/http"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// The operation cache keeps prepared operations by their request: the same
// query with other variables is prepared (and its variables validated) again,
// and a cache far smaller than the operations in use still answers each
// correctly.
func TestOperationCacheKeepsEachRequestApart(t *testing.T) {
	tr := newTestRouter(t, limits.Defaults())
	search := `query($q: String!) { searchCigars(query: $q, first: 2) { edges { node { id name } } } }`
	brands := `{ brands(first: 2) { edges { node { id name } } } }`
	for round := range 3 {
		for _, tc := range []struct {
			name   string
			query  string
			vars   any
			status int
		}{
			{"search", search, map[string]any{"q": "padron"}, http.StatusOK},
			{"search, other variables", search, map[string]any{"q": "fuente"}, http.StatusOK},
			{"search, invalid variables", search, map[string]any{"q": map[string]any{"not": "a string"}}, http.StatusBadRequest},
			{"search, variables missing", search, nil, http.StatusBadRequest},
			{"brands", brands, nil, http.StatusOK},
		} {
			w := tr.serve(queryBody(tc.query, tc.vars))
			if w.Code != tc.status {
				t.Fatalf("round %d, %s: %d %s", round, tc.name, w.Code, w.Body)
			}
			r := decodeReply(t, w)
			if tc.status == http.StatusOK && (len(r.Errors) > 0 || r.Data == nil) {
				t.Fatalf("round %d, %s: %s", round, tc.name, w.Body)
			}
			if tc.status != http.StatusOK && len(r.Errors) == 0 {
				t.Fatalf("round %d, %s: no error: %s", round, tc.name, w.Body)
			}
		}
	}
	// Different variables, different answers, every round.
	a := tr.queryData(t, search, map[string]any{"q": "padron"})
	b := tr.queryData(t, search, map[string]any{"q": "fuente"})
	if a == b {
		t.Fatalf("two searches answered alike: %s", a)
	}
	if again := tr.queryData(t, search, map[string]any{"q": "padron"}); again != a {
		t.Fatalf("the cached search answered %s, first %s", again, a)
	}
}
