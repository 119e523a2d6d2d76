package router_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// nestedInline is a valid selection nested n brackets deep (with the
// operation's own): inline fragments add nesting, not depth.
func nestedInline(n int) string {
	return "{ " + strings.Repeat("... on Query { ", n-1) + "__typename" + strings.Repeat(" }", n-1) + " }"
}

// deepVariables is a request whose variables object is n levels deep.
func deepVariables(n int) []byte {
	return []byte(`{"query": "query($a: String) { brands(first: 1, after: $a) { edges { cursor } } }", "variables": ` +
		string(nestedVariables("a", n)) + `}`)
}

// paddedVariables is a request of exactly n JSON tokens: 10 of the request and
// the list's brackets, the rest zeros.
func paddedVariables(n int) []byte {
	return []byte(`{"query": "{ __typename }", "variables": {"pad": [` + strings.Repeat("0,", n-11) + `0]}}`)
}

func spreadFragments(n int, fields string) string {
	q := "{ "
	for i := range n {
		q += "...F" + strconv.Itoa(i) + " "
	}
	q += "}"
	for i := range n {
		q += " fragment F" + strconv.Itoa(i) + " on Query { " + strings.ReplaceAll(fields, "#", strconv.Itoa(i)) + " }"
	}
	return q
}

// Every bound refuses one past its default maximum with a 400 naming it, and
// lets its maximum through (to a 200 where a valid operation can reach it).
func TestPreParseBoundsThroughTheRouter(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	def := limits.Defaults()
	pad := func(n int) string { // { __typename } and a comment: n bytes
		return "{ __typename }#" + strings.Repeat("x", n-15)
	}
	tests := []struct {
		limit       string
		atMax, over []byte
		ok          bool // the operation at the maximum is valid
		actual, max int
	}{
		{"query bytes", queryBody(pad(def.MaxQueryBytes), nil), queryBody(pad(def.MaxQueryBytes+1), nil), true, def.MaxQueryBytes + 1, def.MaxQueryBytes},
		// { a b … }: tokens past the maximum are refused before the fields are
		// found unknown.
		{"tokens", queryBody("{ "+strings.Repeat("a ", def.MaxTokens-2)+"}", nil), queryBody("{ "+strings.Repeat("a ", def.MaxTokens-1)+"}", nil), false, def.MaxTokens + 1, def.MaxTokens},
		{"nesting", queryBody(nestedInline(def.MaxNesting), nil), queryBody(nestedInline(def.MaxNesting+1), nil), true, def.MaxNesting + 1, def.MaxNesting},
		// { ( and the list's brackets.
		{"nesting", queryBody(`{ brands(first: 1, after: `+strings.Repeat("[", def.MaxNesting-2)+strings.Repeat("]", def.MaxNesting-2)+`) { edges { cursor } } }`, nil),
			queryBody(`{ brands(first: 1, after: `+strings.Repeat("[", def.MaxNesting-1)+strings.Repeat("]", def.MaxNesting-1)+`) { edges { cursor } } }`, nil), false, def.MaxNesting + 1, def.MaxNesting},
		{"nesting", deepVariables(def.MaxNesting), deepVariables(def.MaxNesting + 1), false, def.MaxNesting + 1, def.MaxNesting},
		{"tokens", paddedVariables(def.MaxTokens), paddedVariables(def.MaxTokens + 1), true, def.MaxTokens + 1, def.MaxTokens},
		{"definitions", queryBody(spreadFragments(def.MaxDefinitions-1, "a#: __typename"), nil), queryBody(spreadFragments(def.MaxDefinitions, "a#: __typename"), nil), false, def.MaxDefinitions + 1, def.MaxDefinitions},
		// 10 fragments × (10 spreads + 10 × 199 fields) = 20,000.
		{"fragment product", queryBody(spreadFragments(10, strings.Repeat("__typename ", 199)), nil), queryBody(spreadFragments(10, strings.Repeat("__typename ", 200)), nil), false, 10 * 2010, def.MaxFragmentProduct},
	}
	for _, tt := range tests {
		t.Run(tt.limit+" "+strconv.Itoa(tt.actual), func(t *testing.T) {
			w := tr.serve(tt.atMax)
			r := decodeReply(t, w)
			if tt.ok && (w.Code != http.StatusOK || len(r.Errors) > 0) {
				t.Fatalf("at the maximum: %d %+v", w.Code, r.Errors)
			}
			if len(r.Errors) > 0 && r.Errors[0].Extensions["limit"] == tt.limit {
				t.Fatalf("at the maximum: refused by %s: %+v", tt.limit, r.Errors[0])
			}
			w = tr.serve(tt.over)
			r = decodeReply(t, w)
			if w.Code != http.StatusBadRequest || len(r.Errors) != 1 {
				t.Fatalf("one past the maximum: %d %+v", w.Code, r.Errors)
			}
			e := r.Errors[0]
			want := map[string]any{"code": limits.CodeTooLarge, "limit": tt.limit, "actual": float64(tt.actual), "maximum": float64(tt.max)}
			for k, v := range want {
				if e.Extensions[k] != v {
					t.Fatalf("extensions = %v, want %v", e.Extensions, want)
				}
			}
			if e.Message == "" {
				t.Fatal("no message")
			}
		})
	}
	t.Run("body bytes", func(t *testing.T) {
		atMax := queryBody("{ __typename }", nil)
		atMax = append(atMax[:len(atMax)-1], []byte(strings.Repeat(" ", def.MaxBodyBytes-len(atMax))+"}")...)
		if w := tr.serve(atMax); w.Code != http.StatusOK {
			t.Fatalf("a body of %d bytes: %d %s", len(atMax), w.Code, w.Body.Bytes())
		}
		w := tr.serve(append(atMax, ' '))
		r := decodeReply(t, w)
		if w.Code != http.StatusRequestEntityTooLarge || len(r.Errors) != 1 || r.Errors[0].Extensions["limit"] != "body bytes" || r.Errors[0].Extensions["maximum"] != float64(def.MaxBodyBytes) {
			t.Fatalf("a body of %d bytes: %d %+v", len(atMax)+1, w.Code, r.Errors)
		}
	})
}

// The attack that took 109 s and 2 GB: a list literal nested 520,000 levels
// deep in a 1 MB body. Each bound alone refuses it before any parser reads it:
// the body's bytes (by default), the operation's bytes (with the old 1 MiB
// body limit), its tokens, its nesting.
func TestDeeplyNestedListIsRefusedBeforeParsing(t *testing.T) {
	const levels = 520_000
	body := queryBody(`{ brands(after: `+strings.Repeat("[", levels)+strings.Repeat("]", levels)+`) { edges { cursor } } }`, nil)
	tests := []struct {
		name   string
		cfg    limits.Config
		status int
		limit  string
	}{
		{"default limits", limits.Config{}, http.StatusRequestEntityTooLarge, "body bytes"},
		{"1 MiB body", limits.Config{MaxBodyBytes: 1 << 20}, http.StatusBadRequest, "query bytes"},
		{"1 MiB body and operation", limits.Config{MaxBodyBytes: 1 << 20, MaxQueryBytes: 1 << 20}, http.StatusBadRequest, "tokens"},
		{"1 MiB body and operation, 2M tokens", limits.Config{MaxBodyBytes: 1 << 20, MaxQueryBytes: 1 << 20, MaxTokens: 2 << 20}, http.StatusBadRequest, "nesting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestRouter(t, tt.cfg).serve(body)
			r := decodeReply(t, w)
			if w.Code != tt.status || len(r.Errors) != 1 || r.Errors[0].Extensions["limit"] != tt.limit {
				t.Fatalf("%d %.300s, want %d %s", w.Code, w.Body.Bytes(), tt.status, tt.limit)
			}
			if tt.limit == "nesting" && (r.Errors[0].Extensions["code"] != limits.CodeTooLarge || r.Errors[0].Extensions["actual"] != float64(levels+2)) {
				t.Fatalf("extensions = %v", r.Errors[0].Extensions)
			}
		})
	}
}

// graphiQLIntrospection is the introspection query GraphiQL 4.1.2 sends (its
// bundle's getIntrospectionQuery with descriptions), as it spaces it; full is
// graphql-js's with every option on, the largest one a client sends.
func graphiQLIntrospection(full bool) string {
	opt := func(s string) string {
		if full {
			return s
		}
		return ""
	}
	return `
    query IntrospectionQuery {
      __schema {
        ` + opt("description") + `
        queryType { name kind }
        mutationType { name kind }
        subscriptionType { name kind }
        types {
          ...FullType
        }
        directives {
          name
          description
          ` + opt("isRepeatable") + `
          locations
          args` + opt("(includeDeprecated: true)") + ` {
            ...InputValue
          }
        }
      }
    }

    fragment FullType on __Type {
      kind
      name
      description
      ` + opt("specifiedByURL") + `
      ` + opt("isOneOf") + `
      fields(includeDeprecated: true) {
        name
        description
        args` + opt("(includeDeprecated: true)") + ` {
          ...InputValue
        }
        type {
          ...TypeRef
        }
        isDeprecated
        deprecationReason
      }
      inputFields` + opt("(includeDeprecated: true)") + ` {
        ...InputValue
      }
      interfaces {
        ...TypeRef
      }
      enumValues(includeDeprecated: true) {
        name
        description
        isDeprecated
        deprecationReason
      }
      possibleTypes {
        ...TypeRef
      }
    }

    fragment InputValue on __InputValue {
      name
      description
      type { ...TypeRef }
      defaultValue
      ` + opt("isDeprecated") + `
      ` + opt("deprecationReason") + `
    }

    fragment TypeRef on __Type {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
                ofType {
                  kind
                  name
                  ofType {
                    kind
                    name
                    ofType {
                      kind
                      name
                      ofType {
                        kind
                        name
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  `
}

func TestGraphiQLIntrospectionPasses(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	def := limits.Defaults()
	for _, full := range []bool{false, true} {
		q := graphiQLIntrospection(full)
		text := limits.ScanQuery(q)
		t.Logf("full %v: %d bytes, %d tokens, nesting %d (maxima %d, %d, %d)", full, len(q), text.Tokens, text.Nesting, def.MaxQueryBytes, def.MaxTokens, def.MaxNesting)
		body, _ := json.Marshal(map[string]any{"query": q, "operationName": "IntrospectionQuery"})
		w := tr.serve(body)
		r := decodeReply(t, w)
		if full {
			// This graph's engine has no isOneOf nor specifiedByURL: what
			// matters is that no bound refuses the operation.
			for _, e := range r.Errors {
				if e.Extensions["code"] == limits.CodeTooLarge {
					t.Fatalf("full introspection refused: %+v", e)
				}
			}
			continue
		}
		if w.Code != http.StatusOK || len(r.Errors) > 0 || r.Data["__schema"] == nil {
			t.Fatalf("GraphiQL's introspection: %d %+v", w.Code, r.Errors)
		}
	}
}
