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
				map[string]any{"__typename": "Voucher", "serial": "V-10"},
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
					case m["serial"] != nil:
						parts = append(parts, "voucher "+m["serial"].(string))
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

type entityResolvers = map[string]func(map[string]any) (map[string]any, error)

func providesSubgraphs() map[string]*fakeSubgraph {
	ann := map[string]any{"__typename": "User", "id": "u1", "name": "Ann", "email": "ann@example.com"}
	return map[string]*fakeSubgraph{
		"reviews": {query: map[string]any{"reviews": []any{
			map[string]any{"__typename": "Review", "id": "r1", "body": "Even draw.", "author": map[string]any{"__typename": "User", "id": "u1", "name": "Ann"}},
		}}},
		"accounts": {entities: entityResolvers{"User": entityByID(ann)}},
	}
}

// @provides: the author's name comes with the review, so accounts is called
// only for what reviews does not provide.
func TestFederationProvides(t *testing.T) {
	sg := providesSubgraphs()
	tr := newFederationRouter(t, "provides", sg, limits.Config{})
	got := tr.queryData(t, `{ reviews { body author { name } } }`, nil)
	sameJSON(t, got, `{"reviews":[{"body":"Even draw.","author":{"name":"Ann"}}]}`)
	if calls := sg["accounts"].Calls(); len(calls) != 0 {
		t.Fatalf("the provided name was fetched from accounts: %v", calls)
	}
	got = tr.queryData(t, `{ reviews { author { name email } } }`, nil)
	sameJSON(t, got, `{"reviews":[{"author":{"name":"Ann","email":"ann@example.com"}}]}`)
	if calls := sg["accounts"].Calls(); len(calls) != 1 {
		t.Fatalf("accounts was called %d times for the email, want once", len(calls))
	}
}

func shareableSubgraphs() map[string]*fakeSubgraph {
	return map[string]*fakeSubgraph{
		"products": {
			query:    map[string]any{"topProducts": []any{map[string]any{"__typename": "Product", "id": "p1", "name": "Robusto", "price": 12}}},
			entities: entityResolvers{"Product": entityByID(map[string]any{"__typename": "Product", "id": "p1", "name": "Robusto", "price": 12})},
		},
		"catalog": {
			query: map[string]any{"product": func(args map[string]any) any {
				return map[string]any{"__typename": "Product", "id": args["id"], "name": "Robusto", "origin": "Nicaragua"}
			}},
			entities: entityResolvers{"Product": entityByID(map[string]any{"__typename": "Product", "id": "p1", "name": "Robusto", "origin": "Nicaragua"})},
		},
	}
}

// @shareable: a field both subgraphs resolve is read from the one the query
// is already in, whichever that is.
func TestFederationShareable(t *testing.T) {
	sg := shareableSubgraphs()
	tr := newFederationRouter(t, "shareable", sg, limits.Config{})
	tests := []struct {
		query, want     string
		products, catal int // calls each subgraph gets
	}{
		{`{ topProducts { name price } }`, `{"topProducts":[{"name":"Robusto","price":12}]}`, 1, 0},
		{`{ product(id: "p1") { name origin } }`, `{"product":{"name":"Robusto","origin":"Nicaragua"}}`, 0, 1},
		{`{ topProducts { name origin } }`, `{"topProducts":[{"name":"Robusto","origin":"Nicaragua"}]}`, 1, 1},
		{`{ product(id: "p1") { name price } }`, `{"product":{"name":"Robusto","price":12}}`, 1, 1},
	}
	for _, tt := range tests {
		sameJSON(t, tr.queryData(t, tt.query, nil), tt.want)
		if p, c := len(sg["products"].Calls()), len(sg["catalog"].Calls()); p != tt.products || c != tt.catal {
			t.Errorf("%s: products called %d times, catalog %d; want %d and %d", tt.query, p, c, tt.products, tt.catal)
		}
	}
}

func overrideSubgraphs() map[string]*fakeSubgraph {
	p := map[string]any{"__typename": "Product", "id": "p1", "name": "Robusto", "stock": 0}
	return map[string]*fakeSubgraph{
		"legacy":    {query: map[string]any{"products": []any{p}}, entities: entityResolvers{"Product": entityByID(p)}},
		"inventory": {entities: entityResolvers{"Product": entityByID(map[string]any{"__typename": "Product", "id": "p1", "stock": 7})}},
	}
}

// @override: inventory took stock over from legacy, which still has the field
// (with a stale value): the router asks inventory, and never legacy.
func TestFederationOverride(t *testing.T) {
	sg := overrideSubgraphs()
	tr := newFederationRouter(t, "override", sg, limits.Config{})
	sameJSON(t, tr.queryData(t, `{ products { name stock } }`, nil), `{"products":[{"name":"Robusto","stock":7}]}`)
	for _, c := range sg["legacy"].Calls() {
		if strings.Contains(c.Query, "stock") {
			t.Fatalf("legacy was asked for the overridden field: %s", c.Query)
		}
	}
}

// mediaSubgraphs answers the interface-object composition: media owns the
// Media entity interface, ratings knows it as an @interfaceObject.
func mediaSubgraphs() map[string]*fakeSubgraph {
	book := map[string]any{"__typename": "Book", "id": "m1", "title": "Cigar Almanac", "pages": 320}
	movie := map[string]any{"__typename": "Movie", "id": "m2", "title": "Smoke", "minutes": 112}
	concrete := entityByID(book, movie)
	ratings := map[string]any{"m1": 4, "m2": 5}
	return map[string]*fakeSubgraph{
		"media": {
			query: map[string]any{"media": []any{book, movie}},
			// ratings' Media representations find their concrete type here.
			entities: entityResolvers{"Media": concrete, "Book": concrete, "Movie": concrete},
			isA:      map[string][]string{"Book": {"Media"}, "Movie": {"Media"}},
		},
		"ratings": {
			query: map[string]any{"topRated": []any{map[string]any{"__typename": "Media", "id": "m2", "rating": 5}}},
			entities: entityResolvers{"Media": func(rep map[string]any) (map[string]any, error) {
				id, _ := rep["id"].(string)
				return map[string]any{"__typename": "Media", "id": id, "rating": ratings[id]}, nil
			}},
		},
	}
}

// @interfaceObject: ratings adds rating to every Media without knowing its
// implementations; the router sends it representations typed Media.
func TestFederationInterfaceObject(t *testing.T) {
	sg := mediaSubgraphs()
	tr := newFederationRouter(t, "interface-object", sg, limits.Config{})
	got := tr.queryData(t, `{ media { __typename title rating ... on Book { pages } } }`, nil)
	sameJSON(t, got, `{"media":[{"__typename":"Book","title":"Cigar Almanac","rating":4,"pages":320},{"__typename":"Movie","title":"Smoke","rating":5}]}`)
	calls := sg["ratings"].Calls()
	if len(calls) != 1 {
		t.Fatalf("ratings called %d times, want once", len(calls))
	}
	for _, r := range calls[0].Variables["representations"].([]any) {
		if typ := r.(map[string]any)["__typename"]; typ != "Media" {
			t.Errorf("ratings was sent a %v representation, want Media", typ)
		}
	}
	// From the @interfaceObject's side: ratings answers Media, media says
	// which type each one is.
	got = tr.queryData(t, `{ topRated { __typename id rating ... on Movie { title minutes } ... on Book { pages } } }`, nil)
	sameJSON(t, got, `{"topRated":[{"__typename":"Movie","id":"m2","rating":5,"title":"Smoke","minutes":112}]}`)
}

func entityInterfaceSubgraphs() map[string]*fakeSubgraph {
	cigar := map[string]any{"__typename": "Cigar", "id": "cig_1", "name": "Robusto"}
	venue := map[string]any{"__typename": "Venue", "id": "ven_1"}
	nodes := map[string]any{"cig_1": cigar, "ven_1": venue}
	return map[string]*fakeSubgraph{
		"catalog": {
			query: map[string]any{
				"nodes": []any{cigar, venue},
				"node":  func(args map[string]any) any { return nodes[args["id"].(string)] },
			},
			entities: entityResolvers{"Cigar": entityByID(cigar), "Venue": entityByID(venue)},
			isA:      map[string][]string{"Cigar": {"Node"}, "Venue": {"Node"}},
		},
		"venues": {entities: entityResolvers{"Venue": entityByID(map[string]any{"__typename": "Venue", "id": "ven_1", "city": "Miami"})}},
	}
}

// Entity interfaces: catalog owns `interface Node @key(fields: "id")` and
// node(id:) for every type, Venue as a key-only stub that venues completes.
func TestFederationEntityInterface(t *testing.T) {
	sg := entityInterfaceSubgraphs()
	tr := newFederationRouter(t, "entity-interface", sg, limits.Config{})
	q := `{ nodes { __typename id ... on Cigar { name } ... on Venue { city } } }`
	sameJSON(t, tr.queryData(t, q, nil), `{"nodes":[{"__typename":"Cigar","id":"cig_1","name":"Robusto"},{"__typename":"Venue","id":"ven_1","city":"Miami"}]}`)
	q = `query($id: ID!) { node(id: $id) { id ... on Venue { city } } }`
	sameJSON(t, tr.queryData(t, q, map[string]any{"id": "ven_1"}), `{"node":{"id":"ven_1","city":"Miami"}}`)
	sameJSON(t, tr.queryData(t, q, map[string]any{"id": "cig_1"}), `{"node":{"id":"cig_1"}}`)
	sameJSON(t, tr.queryData(t, q, map[string]any{"id": "nope"}), `{"node":null}`)
}
