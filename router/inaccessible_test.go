package router_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/vitolahq/vitola/router/limits"
)

// inaccessibleNames lists every element of a composition that is
// @inaccessible: types, fields, arguments, enum values and input fields.
func inaccessibleNames(tb testing.TB, pattern string) []string {
	tb.Helper()
	var rc struct {
		EngineConfig struct {
			GraphqlSchema string `json:"graphqlSchema"`
		} `json:"engineConfig"`
	}
	if err := json.Unmarshal(compositionConfig(tb, pattern), &rc); err != nil {
		tb.Fatal(err)
	}
	doc, err := parser.ParseSchema(&ast.Source{Input: rc.EngineConfig.GraphqlSchema})
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	hidden := func(name string, d ast.DirectiveList) {
		if d.ForName("inaccessible") != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, def := range doc.Definitions {
		hidden(def.Name, def.Directives)
		for _, f := range def.Fields {
			hidden(f.Name, f.Directives)
			for _, a := range f.Arguments {
				hidden(a.Name, a.Directives)
			}
		}
		for _, v := range def.EnumValues {
			hidden(v.Name, v.Directives)
		}
	}
	return names
}

// inaccessibleSubgraphs answers the inaccessible composition. Its data holds
// what only a leak would show: an inaccessible enum value, a union member and
// an interface implementation that are inaccessible.
func inaccessibleSubgraphs() map[string]*fakeSubgraph {
	hidden := map[string]any{"__typename": "Product", "id": "p3", "name": "Staff Reserve", "grade": "INTERNAL_GRADE", "internalCost": 3}
	p1 := map[string]any{"__typename": "Product", "id": "p1", "name": "Robusto", "grade": "PREMIUM", "internalCost": 5,
		"internalSupplier": map[string]any{"__typename": "InternalSupplier", "name": "Tabacalera"}}
	p2 := map[string]any{"__typename": "Product", "id": "p2", "name": "Corona", "grade": "STANDARD", "internalCost": 2,
		"related": func(map[string]any) any { return []any{hidden} }}
	p1["related"] = func(map[string]any) any { return []any{p2} }
	hidden["related"] = func(map[string]any) any { return []any{p1} }
	products := []any{p1, p2}
	return map[string]*fakeSubgraph{
		"shop": {
			query: map[string]any{
				"products":       func(map[string]any) any { return products },
				"search":         func(map[string]any) any { return []any{p1} },
				"feed":           []any{p1, map[string]any{"__typename": "InternalNote", "text": "restock"}},
				"featured":       map[string]any{"__typename": "InternalAudit", "title": "Q3 audit"},
				"internalReport": func(map[string]any) any { return "margins" },
			},
			entities: entityResolvers{"Product": entityByID(p1, p2, hidden)},
			isA:      map[string][]string{"Product": {"FeedItem"}, "InternalNote": {"FeedItem"}, "Promotion": {"Listing"}, "InternalAudit": {"Listing"}},
		},
		"stock": {entities: entityResolvers{"Product": func(rep map[string]any) (map[string]any, error) {
			return map[string]any{"id": rep["id"], "inStock": rep["id"] != "p2"}, nil
		}}},
	}
}

// federationRequest is one request of TestNoRequestAnswers500: the status it
// must get.
type federationRequest struct {
	query  string
	vars   map[string]any
	status int
}

func ok(q string) federationRequest { return federationRequest{query: q, status: http.StatusOK} }
func refused(q string) federationRequest {
	return federationRequest{query: q, status: http.StatusBadRequest}
}
func refusedVars(q string, vars map[string]any) federationRequest {
	return federationRequest{query: q, vars: vars, status: http.StatusBadRequest}
}

// No request to the router, of any shape, makes it answer 500 because of how
// the schema was loaded, and no answer names an @inaccessible element the
// request did not spell itself: each pattern's queries, and queries naming
// (or nearly naming) inaccessible fields, types, enum values, arguments and
// input fields, in the operation and in variables.
func TestNoRequestAnswers500OrNamesAnInaccessibleElement(t *testing.T) {
	introspection := ok(graphiQLIntrospection(false))
	patterns := []struct {
		name      string
		subgraphs func() map[string]*fakeSubgraph
		requests  []federationRequest
	}{
		{"requires-inaccessible", requiresSubgraphs, []federationRequest{
			ok(`{ products { id name isExpensive shippingClass } }`), ok(`{ products { shippingClass } }`),
			refused(`{ products { price } }`), refused(`{ products { pric } }`), refused(`{ products { isExpensive(price: 1) } }`),
		}},
		{"requires-fragments", requiresFragmentsSubgraphs, []federationRequest{
			ok(`{ orders { id summary highlightLength } }`), ok(`{ orders { items { ... on Book { title } } } }`),
			{query: `{ orders { highlight { title } } }`, status: http.StatusOK}, // a Podcast: an error, unnamed
			refused(`{ orders { items { ... on Voucher { serial } } } }`), refused(`{ orders { highlight { ... on Podcast { episodes } } } }`),
			refused(`{ orders { items { ...V } } } fragment V on Voucher { serial }`), refused(`{ orders { items { ... on Vouche { serial } } } }`),
			refused(`{ orders { highlight { episodes } } }`),
		}},
		{"non-resolvable-keys", nonResolvableKeySubgraphs, []federationRequest{ok(`{ b { id a { id name nameInB compositeId { one two } } } }`)}},
		{"provides", providesSubgraphs, []federationRequest{ok(`{ reviews { id body author { id name email } } }`)}},
		{"shareable", shareableSubgraphs, []federationRequest{ok(`{ topProducts { id name price origin } }`), ok(`{ product(id: "p1") { id name price origin } }`)}},
		{"override", overrideSubgraphs, []federationRequest{ok(`{ products { id name stock } }`)}},
		{"interface-object", mediaSubgraphs, []federationRequest{
			ok(`{ media { __typename id title rating ... on Book { pages } ... on Movie { minutes } } }`),
			ok(`{ topRated { __typename id title rating ... on Book { pages } ... on Movie { minutes } } }`),
		}},
		{"entity-interface", entityInterfaceSubgraphs, []federationRequest{
			ok(`{ nodes { __typename id ... on Cigar { name } ... on Venue { city } } }`),
			ok(`{ node(id: "ven_1") { id ... on Venue { city } } }`),
		}},
		{"inaccessible", inaccessibleSubgraphs, []federationRequest{
			ok(`{ products { id name grade inStock } }`),
			ok(`{ products(first: 2, grade: PREMIUM) { name related { name inStock } } }`),
			ok(`{ search(filter: {origin: "Cuba"}) { name } }`),
			{query: `query($f: ProductFilter!) { search(filter: $f) { name } }`, vars: map[string]any{"f": map[string]any{"origin": "Cuba"}}, status: http.StatusOK},
			ok(`{ feed { ... on Product { name } } }`),           // an InternalNote: an error, unnamed
			ok(`{ featured { title } }`),                         // an InternalAudit: an error, unnamed
			ok(`{ products { related { related { grade } } } }`), // INTERNAL_GRADE: an error, unnamed
			ok(`{ __type(name: "InternalSupplier") { name } }`),
			refused(`{ products { internalCost } }`),
			refused(`{ products { internalSupplier { name } } }`),
			refused(`{ internalReport }`),
			refused(`{ internalReport(filter: {internalSecret: "x"}) }`),
			refused(`{ products(includeInternal: true) { id } }`),
			refused(`{ products(grade: INTERNAL_GRADE) { id } }`),
			refused(`{ search(filter: {internalCode: "x"}) { id } }`),
			refused(`{ feed { ... on InternalNote { text } } }`),
			refused(`{ featured { ... on InternalAudit { title } } }`),
			refused(`{ feed { ...N } } fragment N on InternalNote { text }`),
			refused(`query($f: InternalFilter) { products { id } }`),
			refusedVars(`query($g: Grade) { products(grade: $g) { id } }`, map[string]any{"g": "INTERNAL_GRADE"}),
			refusedVars(`query($f: ProductFilter!) { search(filter: $f) { id } }`, map[string]any{"f": map[string]any{"internalCode": "x"}}),
			// Near misses: suggestions ("did you mean") come from the client
			// schema only.
			refused(`{ products { internalCos } }`),
			refused(`{ internalRepor }`),
			refused(`{ products(includeInterna: true) { id } }`),
			refused(`{ products(grade: INTERNAL_GRAD) { id } }`),
			refused(`{ search(filter: {internalCod: "x"}) { id } }`),
			refused(`{ feed { ... on InternalNot { text } } }`),
			refusedVars(`query($g: Grade) { products(grade: $g) { id } }`, map[string]any{"g": "INTERNAL_GRAD"}),
			refusedVars(`query($f: ProductFilter!) { search(filter: $f) { id } }`, map[string]any{"f": map[string]any{"internalCod": "x"}}),
		}},
	}
	for _, p := range patterns {
		t.Run(p.name, func(t *testing.T) {
			names := inaccessibleNames(t, p.name)
			tr := newFederationRouter(t, p.name, p.subgraphs(), limits.Config{})
			for _, req := range append(p.requests, introspection, ok(`{ __typename }`)) {
				body := queryBody(req.query, req.vars)
				w := tr.serve(body)
				var reply struct {
					Errors []struct {
						Message string `json:"message"`
					} `json:"errors"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &reply); err != nil {
					t.Fatalf("%s: not JSON: %s", req.query, w.Body.Bytes())
				}
				if w.Code != req.status || (w.Code == http.StatusBadRequest && len(reply.Errors) == 0) {
					t.Errorf("%.200s %v: %d, want %d: %.500s", req.query, req.vars, w.Code, req.status, w.Body.Bytes())
				}
				for _, name := range names {
					word := regexp.MustCompile(`\b` + name + `\b`)
					if word.Match(w.Body.Bytes()) && !word.Match(body) {
						t.Errorf("%.200s %v: the answer names the inaccessible %s: %.500s", req.query, req.vars, name, w.Body.Bytes())
					}
				}
			}
		})
	}
}

// Introspection shows the client schema: no inaccessible type, field,
// argument, enum value, input field, union member or implementation.
func TestIntrospectionShowsTheClientSchemaOnly(t *testing.T) {
	tr := newFederationRouter(t, "inaccessible", inaccessibleSubgraphs(), limits.Config{})
	names := func(q string, path ...string) []string {
		t.Helper()
		var list any = decodeData(t, tr, q)
		for _, k := range path {
			list = list.(map[string]any)[k]
		}
		var out []string
		for _, x := range list.([]any) {
			out = append(out, x.(map[string]any)["name"].(string))
		}
		return out
	}
	tests := []struct {
		query string
		path  []string
		want  []string
	}{
		{`{ __type(name: "Query") { fields { name } } }`, []string{"__type", "fields"}, []string{"products", "search", "feed", "featured"}},
		{`{ __type(name: "Product") { fields { name } } }`, []string{"__type", "fields"}, []string{"id", "name", "grade", "related", "inStock"}},
		{`{ __type(name: "Grade") { enumValues { name } } }`, []string{"__type", "enumValues"}, []string{"PREMIUM", "STANDARD"}},
		{`{ __type(name: "ProductFilter") { inputFields { name } } }`, []string{"__type", "inputFields"}, []string{"origin"}},
		{`{ __type(name: "FeedItem") { possibleTypes { name } } }`, []string{"__type", "possibleTypes"}, []string{"Product"}},
		{`{ __type(name: "Listing") { possibleTypes { name } } }`, []string{"__type", "possibleTypes"}, []string{"Promotion"}},
	}
	for _, tt := range tests {
		if got := names(tt.query, tt.path...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.query, got, tt.want)
		}
	}
	args := decodeData(t, tr, `{ __type(name: "Query") { fields { name args { name } } } }`)
	for _, f := range args["__type"].(map[string]any)["fields"].([]any) {
		f := f.(map[string]any)
		if f["name"] == "products" {
			var got []string
			for _, a := range f["args"].([]any) {
				got = append(got, a.(map[string]any)["name"].(string))
			}
			if want := []string{"first", "grade"}; !reflect.DeepEqual(got, want) {
				t.Errorf("products' arguments: %v, want %v", got, want)
			}
		}
	}
	var types []string
	for _, ty := range decodeData(t, tr, `{ __schema { types { name } } }`)["__schema"].(map[string]any)["types"].([]any) {
		types = append(types, ty.(map[string]any)["name"].(string))
	}
	for _, hidden := range []string{"InternalSupplier", "InternalNote", "InternalAudit", "InternalFilter"} {
		if slices.Contains(types, hidden) {
			t.Errorf("__schema lists the inaccessible type %s", hidden)
		}
	}
	if !slices.Contains(types, "Promotion") || !slices.Contains(types, "ProductFilter") {
		t.Errorf("__schema lacks public types: %v", types)
	}
	if got := decodeData(t, tr, `{ __type(name: "InternalSupplier") { name } }`); got["__type"] != nil {
		t.Errorf("__type of an inaccessible type: %v", got)
	}
}

// decodeData sends a query that must succeed without errors and returns its
// data.
func decodeData(tb testing.TB, tr *testRouter, q string) map[string]any {
	tb.Helper()
	w := tr.serve(queryBody(q, nil))
	r := decodeReply(tb, w)
	if w.Code != http.StatusOK || len(r.Errors) > 0 || r.Data == nil {
		tb.Fatalf("%s: %d %s", q, w.Code, w.Body.Bytes())
	}
	return r.Data
}
