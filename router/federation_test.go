package router_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// requiresSubgraphs answers the requires-inaccessible composition: products
// keeps an internal price, pricing computes isExpensive from it, and shipping
// computes shippingClass from isExpensive.
func requiresSubgraphs() map[string]*fakeSubgraph {
	products := []map[string]any{
		{"__typename": "Product", "id": "p1", "name": "Box of 25", "price": 900},
		{"__typename": "Product", "id": "p2", "name": "Single", "price": 12},
	}
	return map[string]*fakeSubgraph{
		"products": {
			query:    map[string]any{"products": products},
			entities: map[string]func(map[string]any) (map[string]any, error){"Product": entityByID(products...)},
		},
		"pricing": {entities: map[string]func(map[string]any) (map[string]any, error){"Product": func(rep map[string]any) (map[string]any, error) {
			price, ok := rep["price"].(json.Number)
			if !ok {
				return nil, fmt.Errorf("the representation lacks the required price")
			}
			n, _ := price.Int64()
			return map[string]any{"id": rep["id"], "isExpensive": n >= 100}, nil
		}}},
		"shipping": {entities: map[string]func(map[string]any) (map[string]any, error){"Product": func(rep map[string]any) (map[string]any, error) {
			expensive, ok := rep["isExpensive"].(bool)
			if !ok {
				return nil, fmt.Errorf("the representation lacks the required isExpensive")
			}
			class := "standard"
			if expensive {
				class = "insured"
			}
			return map[string]any{"id": rep["id"], "shippingClass": class}, nil
		}}},
	}
}

// A public field that @requires an @inaccessible one is planned over the full
// supergraph: the router fetches the price for pricing, never shows it.
func TestFederationRequiresInaccessibleField(t *testing.T) {
	sg := requiresSubgraphs()
	tr := newFederationRouter(t, "requires-inaccessible", sg, limits.Config{})
	t.Run("requires", func(t *testing.T) {
		got := tr.queryData(t, `{ products { id name isExpensive } }`, nil)
		sameJSON(t, got, `{"products":[{"id":"p1","name":"Box of 25","isExpensive":true},{"id":"p2","name":"Single","isExpensive":false}]}`)
	})
	t.Run("a chain through two subgraphs", func(t *testing.T) {
		got := tr.queryData(t, `{ products { id shippingClass } }`, nil)
		sameJSON(t, got, `{"products":[{"id":"p1","shippingClass":"insured"},{"id":"p2","shippingClass":"standard"}]}`)
	})
}

// requiresFragmentsSubgraphs answers the requires-fragments composition: an
// order's items are a union and its highlight an interface, each with an
// @inaccessible member (Voucher, Podcast) that receipts @requires.
func requiresFragmentsSubgraphs() map[string]*fakeSubgraph {
	orders := []map[string]any{
		{"__typename": "Order", "id": "o1",
			"items": []any{
				map[string]any{"__typename": "Book", "title": "Cigar Almanac", "pages": 320},
				map[string]any{"__typename": "Voucher", "code": "V-10"},
				map[string]any{"__typename": "Movie", "title": "Smoke", "minutes": 112},
			},
			"highlight": map[string]any{"__typename": "Podcast", "title": "Leaf Talk", "episodes": 12}},
		{"__typename": "Order", "id": "o2",
			"items":     []any{map[string]any{"__typename": "Movie", "title": "Blue in the Face", "minutes": 83}},
			"highlight": map[string]any{"__typename": "Book", "title": "Cigar Almanac", "pages": 320}},
	}
	isA := map[string][]string{"Book": {"Item", "Media"}, "Movie": {"Item", "Media"}, "Voucher": {"Item"}, "Podcast": {"Media"}}
	return map[string]*fakeSubgraph{
		"orders": {
			query:    map[string]any{"orders": orders},
			entities: map[string]func(map[string]any) (map[string]any, error){"Order": entityByID(orders...)},
			isA:      isA,
		},
		"receipts": {isA: isA, entities: map[string]func(map[string]any) (map[string]any, error){"Order": func(rep map[string]any) (map[string]any, error) {
			out := map[string]any{"id": rep["id"]}
			if items, ok := rep["items"].([]any); ok {
				var parts []string
				for _, it := range items {
					m, _ := it.(map[string]any)
					switch {
					case m["title"] != nil:
						parts = append(parts, m["title"].(string))
					case m["code"] != nil:
						parts = append(parts, "voucher "+m["code"].(string))
					default:
						return nil, fmt.Errorf("an item without its required fields: %v", m)
					}
				}
				out["summary"] = strings.Join(parts, ", ")
			}
			if h, ok := rep["highlight"].(map[string]any); ok {
				for _, f := range []string{"pages", "minutes", "episodes"} {
					if n, ok := h[f].(json.Number); ok {
						out["highlightLength"], _ = n.Int64()
					}
				}
				if out["highlightLength"] == nil || h["title"] == nil {
					return nil, fmt.Errorf("a highlight without its required fields: %v", h)
				}
			}
			return out, nil
		}}},
	}
}

// @requires field sets with inline fragments on union and interface members,
// one member @inaccessible, are fetched whole from orders for receipts.
func TestFederationRequiresWithFragmentsOnInaccessibleMembers(t *testing.T) {
	tr := newFederationRouter(t, "requires-fragments", requiresFragmentsSubgraphs(), limits.Config{})
	t.Run("union", func(t *testing.T) {
		got := tr.queryData(t, `{ orders { id summary } }`, nil)
		sameJSON(t, got, `{"orders":[{"id":"o1","summary":"Cigar Almanac, voucher V-10, Smoke"},{"id":"o2","summary":"Blue in the Face"}]}`)
	})
	t.Run("interface", func(t *testing.T) {
		got := tr.queryData(t, `{ orders { id highlightLength } }`, nil)
		sameJSON(t, got, `{"orders":[{"id":"o1","highlightLength":12},{"id":"o2","highlightLength":320}]}`)
	})
	// The router fetches an inaccessible member to compute a public field, but
	// never answers one: it is an error that does not name the type.
	t.Run("an inaccessible member is not shown", func(t *testing.T) {
		w := tr.serve(queryBody(`{ orders { highlight { title } } }`, nil))
		if w.Code != 200 || !strings.Contains(w.Body.String(), "invalid value for __typename") || strings.Contains(w.Body.String(), "Podcast") {
			t.Fatalf("%d %s", w.Code, w.Body.Bytes())
		}
	})
}

// nonResolvableKeySubgraphs answers the non-resolvable-keys composition: b
// resolves A by its id only; its composite key is resolvable: false.
func nonResolvableKeySubgraphs() map[string]*fakeSubgraph {
	a := map[string]any{"__typename": "A", "id": "a1", "name": "Robusto", "compositeId": map[string]any{"one": "r", "two": "50"}}
	return map[string]*fakeSubgraph{
		"a": {
			query:    map[string]any{"b": map[string]any{"__typename": "B", "id": "b1", "a": a}},
			entities: map[string]func(map[string]any) (map[string]any, error){"A": entityByID(a)},
		},
		"b": {entities: map[string]func(map[string]any) (map[string]any, error){
			"A": entityByID(map[string]any{"__typename": "A", "id": "a1", "nameInB": "Robusto (b)", "compositeId": map[string]any{"one": "r", "two": "50"}}),
		}},
	}
}

// An entity with several keys, one of them resolvable: false in a subgraph: the
// router enters that subgraph through the key it can resolve. (It used the
// composite key, and Query.b.a.nameInB came back null.)
func TestFederationNeverUsesANonResolvableKey(t *testing.T) {
	sg := nonResolvableKeySubgraphs()
	tr := newFederationRouter(t, "non-resolvable-keys", sg, limits.Config{})
	got := tr.queryData(t, `{ b { a { name nameInB } } }`, nil)
	sameJSON(t, got, `{"b":{"a":{"name":"Robusto","nameInB":"Robusto (b)"}}}`)
	for _, c := range sg["b"].Calls() {
		reps, _ := c.Variables["representations"].([]any)
		for _, r := range reps {
			if _, ok := r.(map[string]any)["compositeId"]; ok {
				t.Errorf("b was sent a representation of its non-resolvable key: %v", r)
			}
		}
	}
}

