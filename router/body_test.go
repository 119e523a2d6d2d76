package router_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/router/limits"
)

// A /graphql body means one thing to every parser: one JSON value, no member
// twice, names as spelt, and a JSON Content-Type (issue 17, item 4).
func TestGraphQLBodyIsStrict(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	tests := []struct {
		name, body, contentType string
		status                  int
		code                    string
	}{
		{"trailing data", `{"query":"{ __typename }"} {"x":1}`, "application/json", 400, "INVALID_BODY"},
		{"a member twice", `{"query":"{ __typename }","query":"{ brands(first: 1) { edges { node { name } } } }"}`, "application/json", 400, "INVALID_BODY"},
		{"a member twice, deeper", `{"query":"query($a: Int) { __typename }","variables":{"a":1,"a":2}}`, "application/json", 400, "INVALID_BODY"},
		{"a name in another case", `{"Query":"{ __typename }"}`, "application/json", 400, "INVALID_BODY"},
		{"another media type", `{"query":"{ __typename }"}`, "application/jsonx", 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"extensions are allowed", `{"query":"{ __typename }","extensions":{"tracing":{"version":1}}}`, "application/json; charset=utf-8", 200, ""},
		// The APQ extension, when present, is read strictly.
		{"a persistedQuery without its hash", `{"query":"{ __typename }","extensions":{"persistedQuery":{"version":1}}}`, "application/json", 400, "PERSISTED_QUERY_INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			r.Header.Set(access.Header, tr.key)
			w := httptest.NewRecorder()
			tr.rt.ServeHTTP(w, r)
			reply := decodeReply(t, w)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body.String())
			}
			if tt.code == "" {
				if len(reply.Errors) > 0 || reply.Data["__typename"] != "Query" {
					t.Fatalf("answer: %s", w.Body.String())
				}
				return
			}
			if len(reply.Errors) == 0 || reply.Errors[0].Extensions["code"] != tt.code {
				t.Fatalf("errors %s, want %s", w.Body.String(), tt.code)
			}
		})
	}
}

// A body seen before is answered from its decoded copy: the same bytes
// answer the same, a body one byte apart answers its own, and a refused body
// stays refused however often it comes, before or after a good one.
func TestRepeatedBodies(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	query := `query($n: Int) { brands(first: $n) { edges { node { name } } } }`
	edges := func(body string) (int, string) {
		t.Helper()
		w := tr.serve([]byte(body))
		reply := decodeReply(t, w)
		if len(reply.Errors) > 0 {
			return -1, reply.Errors[0].Extensions["code"].(string)
		}
		return len(reply.Data["brands"].(map[string]any)["edges"].([]any)), ""
	}
	one, two := string(queryBody(query, map[string]int{"n": 1})), string(queryBody(query, map[string]int{"n": 2}))
	bad := strings.Replace(one, `"n":1`, `"n":1,"n":2`, 1) // a member twice
	for range 3 {
		if n, _ := edges(one); n != 1 {
			t.Fatalf("first: 1 answered %d edges", n)
		}
		if n, _ := edges(two); n != 2 {
			t.Fatalf("first: 2 answered %d edges", n)
		}
		if _, code := edges(bad); code != "INVALID_BODY" {
			t.Fatalf("a member twice answered %q, want INVALID_BODY", code)
		}
	}
	// Many at once, the operation new (prepared while the others wait or
	// prepare it too), all sharing one decoded body and its variables.
	fresh := string(queryBody(`query($n: Int, $m: Int) { brands(first: $n) { edges { node { name } } } b: brands(first: $m) { edges { node { id } } } }`, map[string]int{"n": 3, "m": 1}))
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 8 {
		wg.Go(func() {
			for range 4 {
				w := tr.serve([]byte(fresh))
				var reply struct {
					Data struct {
						Brands, B struct{ Edges []any }
					}
				}
				if err := json.Unmarshal(w.Body.Bytes(), &reply); err != nil || len(reply.Data.Brands.Edges) != 3 || len(reply.Data.B.Edges) != 1 {
					errs <- w.Body.String()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("at once: %s", e)
	}
}
