package router_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

// send makes one request through the router's ServeHTTP with the test key.
func (tr *testRouter) send(method, target, accept, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	r.Header.Set(access.Header, tr.key)
	w := httptest.NewRecorder()
	tr.rt.ServeHTTP(w, r)
	return w
}

func getURL(params ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Add(params[i], params[i+1])
	}
	return "/graphql?" + v.Encode()
}

// The response's media type follows Accept, and with it the status of a
// request that fails before execution: 400 in
// application/graphql-response+json, 200 with errors in application/json
// (or with no Accept, or only wildcards). Failures of the HTTP request itself
// (a body that is not JSON, batching) are 4xx in both.
func TestMediaTypeNegotiation(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	const (
		ok       = `{"query":"{ __typename }"}`
		parse    = `{"query":"{"}`
		invalid  = `{"query":"{ noSuchField }"}`
		coercion = `{"query":"query($id: ID!) { __typename }","variables":{"id":null}}`
		aliases  = `{"query":"{ a0: __typename a1: __typename a2: __typename a3: __typename a4: __typename a5: __typename a6: __typename a7: __typename a8: __typename a9: __typename b0: __typename b1: __typename b2: __typename b3: __typename b4: __typename b5: __typename b6: __typename b7: __typename b8: __typename b9: __typename c0: __typename }"}`
		gql      = router.MediaGraphQLResponse
		js       = router.MediaJSON
	)
	for _, tt := range []struct {
		name, accept, body string
		status             int
		media, code        string
	}{
		{"no Accept", "", ok, 200, js, ""},
		{"json", "application/json", ok, 200, js, ""},
		{"graphql-response+json", gql, ok, 200, gql, ""},
		{"both named: the specification's wins", "application/json, " + gql, ok, 200, gql, ""},
		{"json preferred by quality", gql + ";q=0.5, application/json", ok, 200, js, ""},
		{"wildcard", "*/*", ok, 200, js, ""},
		{"application wildcard", "application/*", ok, 200, js, ""},
		{"utf-8 charset", gql + "; charset=utf-8", ok, 200, gql, ""},
		{"browser-like", "text/plain, */*;q=0.1", ok, 200, js, ""},
		{"nothing acceptable", "text/plain", ok, 406, js, router.CodeNotAcceptable},
		{"json refused, wildcard left", "application/json;q=0, */*", ok, 200, gql, ""},
		{"both refused", "application/json;q=0, " + gql + ";q=0", ok, 406, js, router.CodeNotAcceptable},
		{"another charset", "application/json; charset=latin1", ok, 406, js, router.CodeNotAcceptable},

		{"parse failure, json", js, parse, 200, js, limits.CodeParseFailed},
		{"parse failure, no Accept", "", parse, 200, js, limits.CodeParseFailed},
		{"parse failure, graphql-response", gql, parse, 400, gql, limits.CodeParseFailed},
		{"validation failure, json", js, invalid, 200, js, limits.CodeValidationFailed},
		{"validation failure, graphql-response", gql, invalid, 400, gql, limits.CodeValidationFailed},
		{"variable coercion, json", js, coercion, 200, js, limits.CodeValidationFailed},
		{"variable coercion, graphql-response", gql, coercion, 400, gql, limits.CodeValidationFailed},
		{"limit, json", js, aliases, 200, js, limits.CodeAliases},
		{"limit, graphql-response", gql, aliases, 400, gql, limits.CodeAliases},

		{"not JSON, json", js, `{ "not a JSON`, 400, js, router.CodeInvalidBody},
		{"not JSON, graphql-response", gql, `{ "not a JSON`, 400, gql, router.CodeInvalidBody},
		{"batch, json", js, "[" + ok + "]", 400, js, router.CodeBatching},
		{"query missing", js, `{"qeury":"{ __typename }"}`, 400, js, router.CodeBadRequest},
		{"query not a string", js, `{"query":{"obj":"ect"}}`, 400, js, router.CodeInvalidBody},
		{"variables not an object", js, `{"query":"{ __typename }","variables":[1]}`, 400, js, router.CodeInvalidBody},
		{"extensions not an object", js, `{"query":"{ __typename }","extensions":"x"}`, 400, js, router.CodeInvalidBody},
		{"extensions an object", js, `{"query":"{ __typename }","extensions":{"some":"value"}}`, 200, js, ""},
		{"extensions null", gql, `{"query":"{ __typename }","extensions":null}`, 200, gql, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tr.send(http.MethodPost, "/graphql", tt.accept, tt.body)
			r := decodeReply(t, w)
			if w.Code != tt.status || w.Header().Get("Content-Type") != tt.media+"; charset=utf-8" {
				t.Fatalf("%d %s, want %d %s: %s", w.Code, w.Header().Get("Content-Type"), tt.status, tt.media, w.Body)
			}
			if tt.code == "" {
				if len(r.Errors) > 0 || r.Data == nil {
					t.Fatalf("want data and no errors: %s", w.Body)
				}
				return
			}
			if len(r.Errors) == 0 || r.Data != nil {
				t.Fatalf("want errors and no data: %s", w.Body)
			}
			if r.Errors[0].Extensions["code"] != tt.code {
				t.Fatalf("code %v, want %s", r.Errors[0].Extensions["code"], tt.code)
			}
		})
	}
}

// GET runs queries from URL parameters, behind the same key check and limits
// as POST; anything but a query is refused with 405 and Allow: POST.
func TestGET(t *testing.T) {
	tr := newTestRouter(t, limits.Config{MaxBodyBytes: 2048, MaxQueryBytes: 512})
	long := "{ " + strings.Repeat("__typename ", 60) + "}" // > 512 bytes
	for _, tt := range []struct {
		name, target, accept string
		status               int
		code                 string
		allow                string
	}{
		{"query", getURL("query", "{ __typename }"), "", 200, "", ""},
		{"variables, operationName, extensions", getURL("query", `query T($name: String!) { __type(name: $name) { name } } query U { __typename }`,
			"variables", `{"name":"Brand"}`, "operationName", "T", "extensions", `{"some":"value"}`), router.MediaGraphQLResponse, 200, "", ""},
		{"mutation", getURL("query", "mutation { __typename }"), router.MediaGraphQLResponse, 405, router.CodeMethodNotAllowed, "POST"},
		{"subscription", getURL("query", "subscription { x }"), "", 405, router.CodeMethodNotAllowed, "POST"},
		{"named mutation among queries", getURL("query", "query Q { __typename } mutation M { x }", "operationName", "M"), "", 405, router.CodeMethodNotAllowed, "POST"},
		// The query it selects runs over GET, but the document still fails
		// validation: the public schema has no mutation root.
		{"the query beside a mutation", getURL("query", "query Q { __typename } mutation M { x }", "operationName", "Q"), "", 200, limits.CodeValidationFailed, ""},
		{"parse failure, json", getURL("query", "{"), "", 200, limits.CodeParseFailed, ""},
		{"parse failure, graphql-response", getURL("query", "{"), router.MediaGraphQLResponse, 400, limits.CodeParseFailed, ""},
		{"no query", getURL(), "", 400, router.CodeBadRequest, ""},
		{"a parameter twice", getURL("query", "{ __typename }", "query", "{ x }"), "", 400, router.CodeInvalidBody, ""},
		{"unknown parameter", getURL("query", "{ __typename }", "qeury", "x"), "", 400, router.CodeInvalidBody, ""},
		{"variables not JSON", getURL("query", "{ __typename }", "variables", "{"), "", 400, router.CodeInvalidBody, ""},
		{"variables not an object", getURL("query", "{ __typename }", "variables", "[]"), "", 400, router.CodeInvalidBody, ""},
		{"query over its byte limit", getURL("query", long), router.MediaGraphQLResponse, 400, limits.CodeTooLarge, ""},
		{"URL over the body limit", getURL("query", "{ __typename }", "variables", `{"x":"`+strings.Repeat("a", 2048)+`"}`), "", 414, router.CodeBadRequest, ""},
		{"variables nested too deep", getURL("query", "{ __typename }", "variables", `{"x":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`), "", 200, limits.CodeTooLarge, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tr.send(http.MethodGet, tt.target, tt.accept, "")
			r := decodeReply(t, w)
			if w.Code != tt.status || w.Header().Get("Allow") != tt.allow {
				t.Fatalf("%d (Allow %q), want %d (Allow %q): %s", w.Code, w.Header().Get("Allow"), tt.status, tt.allow, w.Body)
			}
			if tt.code == "" {
				if len(r.Errors) > 0 || r.Data == nil {
					t.Fatalf("want data and no errors: %s", w.Body)
				}
				return
			}
			if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != tt.code {
				t.Fatalf("want code %s: %s", tt.code, w.Body)
			}
		})
	}

	t.Run("without a key", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, getURL("query", "{ __typename }"), nil)
		w := httptest.NewRecorder()
		tr.rt.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("%d, want 401: %s", w.Code, w.Body)
		}
	})
	t.Run("other methods", func(t *testing.T) {
		w := tr.send(http.MethodPut, "/graphql", "", `{"query":"{ __typename }"}`)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, POST" {
			t.Fatalf("%d (Allow %q), want 405 (Allow GET, POST)", w.Code, w.Header().Get("Allow"))
		}
	})
	t.Run("a browser gets GraphiQL", func(t *testing.T) {
		w := tr.send(http.MethodGet, getURL("query", "{ __typename }"), "text/html,application/xhtml+xml,*/*;q=0.8", "")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%d %s, want GraphiQL's page", w.Code, w.Header().Get("Content-Type"))
		}
	})
}
