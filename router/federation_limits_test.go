package router_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// related nests Product.related n levels under products (first: 1 each).
func related(n int, leaf string) string {
	return "{ products(first: 1) { " + strings.Repeat("related(first: 1) { ", n) + leaf + strings.Repeat(" }", n) + " } }"
}

// aliased is n aliased fields, a0: f … a(n-1): f.
func aliased(n int, f string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s ", i, f)
	}
	return b.String()
}

// ofTypes is an introspection query n field levels deep.
func ofTypes(n int) string {
	k := n - 5 // __schema types fields type … name
	return "{ __schema { types { fields { type { " + strings.Repeat("ofType { ", k) + "name" + strings.Repeat(" }", k) + " } } } } }"
}

// fanOut spreads a fragment of m aliased fields k times: k × (1 + m) nodes.
func fanOut(k, m int) string {
	return "{ " + strings.Repeat("...A ", k) + "} fragment A on Query { " + aliased(m, "__typename") + "}"
}

// Every operation limit works as documented over a foreign composition too
// (testdata/federation/inaccessible, whose client schema differs from its
// supergraph): its maximum passes, one more is refused with a 400 that names
// the limit (a 413 for the body).
func TestLimitsOverAForeignComposition(t *testing.T) {
	tr := newFederationRouter(t, "inaccessible", inaccessibleSubgraphs(), limits.Config{})
	def := limits.Defaults()
	pad := func(n int) string { return "{ __typename }#" + strings.Repeat("x", n-15) }
	tests := []struct {
		limit, code string
		atMax, over string
		valid       bool // the operation at the maximum runs (200)
	}{
		// products, 6 × related, id: 8 levels.
		{"depth", limits.CodeDepth, related(def.MaxDepth-2, "id"), related(def.MaxDepth-1, "id"), true},
		{"aliases", limits.CodeAliases, "{ products(first: 1) { " + aliased(def.MaxAliases, "id") + "} }", "{ products(first: 1) { " + aliased(def.MaxAliases+1, "id") + "} }", true},
		{"root fields", limits.CodeRootFields, "{ " + aliased(def.MaxRootFields, "products(first: 1) { id }") + "}", "{ " + aliased(def.MaxRootFields+1, "products(first: 1) { id }") + "}", true},
		// 100 × (1 + 9 × 1) = 1000, then 100 × (1 + 10 × 1).
		{"cost", limits.CodeCost, "{ products(first: 100) { related(first: 9) { id } } }", "{ products(first: 100) { related(first: 10) { id } } }", true},
		{"page size", limits.CodePageSize, "{ products(first: 100) { id } }", "{ products(first: 101) { id } }", true},
		{"introspection depth", limits.CodeIntrospection, ofTypes(def.MaxIntrospectionDepth), ofTypes(def.MaxIntrospectionDepth + 1), true},
		{"nodes", limits.CodeTooLarge, fanOut(50, 199), fanOut(50, 200), false},
		{"repeats", limits.CodeTooLarge, "{ products(first: 1) { " + strings.Repeat("id ", def.MaxRepeats) + "} }", "{ products(first: 1) { " + strings.Repeat("id ", def.MaxRepeats+1) + "} }", true},
		{"definitions", limits.CodeTooLarge, spreadFragments(def.MaxDefinitions-1, "a#: __typename"), spreadFragments(def.MaxDefinitions, "a#: __typename"), false},
		{"fragment product", limits.CodeTooLarge, spreadFragments(10, strings.Repeat("__typename ", 199)), spreadFragments(10, strings.Repeat("__typename ", 200)), false},
		{"query bytes", limits.CodeTooLarge, pad(def.MaxQueryBytes), pad(def.MaxQueryBytes + 1), true},
		{"tokens", limits.CodeTooLarge, "{ " + strings.Repeat("a ", def.MaxTokens-2) + "}", "{ " + strings.Repeat("a ", def.MaxTokens-1) + "}", false},
		{"nesting", limits.CodeTooLarge, nestedInline(def.MaxNesting), nestedInline(def.MaxNesting + 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			w := tr.serve(queryBody(tt.atMax, nil))
			r := decodeReply(t, w)
			if tt.valid && (w.Code != http.StatusOK || len(r.Errors) > 0) {
				t.Fatalf("at the maximum: %d %s", w.Code, w.Body.Bytes())
			}
			for _, e := range r.Errors {
				if e.Extensions["limit"] == tt.limit {
					t.Fatalf("at the maximum: refused by %s: %+v", tt.limit, e)
				}
			}
			w = tr.serve(queryBody(tt.over, nil))
			r = decodeReply(t, w)
			if w.Code != http.StatusBadRequest || len(r.Errors) != 1 {
				t.Fatalf("one past the maximum: %d %s", w.Code, w.Body.Bytes())
			}
			if e := r.Errors[0]; e.Extensions["code"] != tt.code || e.Extensions["limit"] != tt.limit || e.Extensions["maximum"] == nil || e.Message == "" {
				t.Fatalf("one past the maximum: %+v, want code %s and limit %s", e, tt.code, tt.limit)
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
		if w.Code != http.StatusRequestEntityTooLarge || len(r.Errors) != 1 || r.Errors[0].Extensions["limit"] != "body bytes" {
			t.Fatalf("a body of %d bytes: %d %+v", len(atMax)+1, w.Code, r.Errors)
		}
	})
}
