package router_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// renameKeys renames the keys of every object in a decoded JSON value.
func renameKeys(v any, names map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = renameKeys(x, names)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = renameKeys(x, names)
		}
		return out
	}
	return v
}

// Aliases inside introspection answer as graphql-js does: the same data under
// the alias. (They read null below the root before, and a non-null field made
// the whole answer null.)
func TestIntrospectionWithAliases(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	data := func(t *testing.T, q string) map[string]any {
		t.Helper()
		w := tr.serve(queryBody(q, nil))
		r := decodeReply(t, w)
		if w.Code != http.StatusOK || len(r.Errors) > 0 || r.Data == nil {
			t.Fatalf("%s: %d %+v", q, w.Code, r.Errors)
		}
		return r.Data
	}
	tests := []struct {
		name           string
		aliased, plain string
		names          map[string]string // alias → field name
	}{
		{"a field of __schema", `{ __schema { a: types { name } } }`, `{ __schema { types { name } } }`, map[string]string{"a": "types"}},
		{"every level of __schema", `{ s: __schema { q: queryType { n: name k: kind } d: directives { n: name a: args { n: name t: type { k: kind o: ofType { n: name } } } } } }`,
			`{ __schema { queryType { name kind } directives { name args { name type { kind ofType { name } } } } } }`,
			map[string]string{"s": "__schema", "q": "queryType", "n": "name", "k": "kind", "d": "directives", "a": "args", "t": "type", "o": "ofType"}},
		{"__type with arguments", `{ t: __type(name: "Brand") { n: name f: fields(includeDeprecated: true) { n: name ty: type { k: kind o: ofType { n: name } } } i: interfaces { n: name } } }`,
			`{ __type(name: "Brand") { name fields(includeDeprecated: true) { name type { kind ofType { name } } } interfaces { name } } }`,
			map[string]string{"t": "__type", "n": "name", "f": "fields", "ty": "type", "k": "kind", "o": "ofType", "i": "interfaces"}},
		{"__typename", `{ tn: __typename __schema { tn: __typename q: queryType { tn: __typename } } __type(name: "Brand") { tn: __typename } }`,
			`{ __typename __schema { __typename queryType { __typename } } __type(name: "Brand") { __typename } }`,
			map[string]string{"tn": "__typename", "q": "queryType"}},
		{"through a fragment", `{ __schema { ...S } } fragment S on __Schema { d: directives { l: locations } }`,
			`{ __schema { directives { locations } } }`, map[string]string{"d": "directives", "l": "locations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := renameKeys(data(t, tt.aliased), tt.names), any(data(t, tt.plain))
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("aliased answer, keys renamed:\n%.500s\nwant:\n%.500s", g, w)
			}
		})
	}
	t.Run("one field under two aliases", func(t *testing.T) {
		got := data(t, `{ __type(name: "Brand") { a: fields { name } b: fields { type { kind } } } }`)
		names := data(t, `{ __type(name: "Brand") { fields { name } } }`)["__type"].(map[string]any)["fields"]
		kinds := data(t, `{ __type(name: "Brand") { fields { type { kind } } } }`)["__type"].(map[string]any)["fields"]
		typ := got["__type"].(map[string]any)
		if !reflect.DeepEqual(typ["a"], names) || !reflect.DeepEqual(typ["b"], kinds) {
			t.Fatalf("got %v", typ)
		}
	})
}
