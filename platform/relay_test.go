package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/users"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/venues"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
	venuessql "github.com/vitolahq/vitola/subgraphs/venues/sqlstore"
)

// The public graph as a Relay client uses it, over real HTTP through the
// router: every connection (found by introspection, so a new one cannot be
// missed) paged forwards and backwards, and node(id:) for every type with an ID.

var (
	relayAna = usersdemo.UserID("ana@vitola.example")
	relayBen = usersdemo.UserID("ben@vitola.example")
	// Every scope of the connected-user data.
	relayScopes = []string{"profile:read", "collections:read", "humidor:read", "sessions:read", "checkins:read"}
)

// relayParents names, for each type that has connection fields, the object
// whose lists the walk pages through (Padrón has 50 cigars and, with
// addRelayData, 8 events; The Ember Room 9 events).
var relayParents = map[string]string{
	"Brand": catalogdemo.BrandID("Padrón"),
	"Venue": venuesdemo.VenueID("The Ember Room"),
}

// relayArgs gives the required arguments of connection fields other than the
// paging ones.
var relayArgs = map[string]map[string]any{
	"Query.searchCigars": {"query": "padron"},
}

func TestRelayConnections(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := open(t, cfg)
			f.addRelayData(t)
			token := f.mint(t, relayAna, relayScopes...)
			conns := f.connections(t)
			for _, c := range conns {
				t.Run(c.parent+"."+c.field, func(t *testing.T) { f.walkConnection(t, token, c) })
			}
			t.Run("Errors", func(t *testing.T) { f.testConnectionErrors(t, token) })
			t.Run("StableUnderWrites", func(t *testing.T) { f.testStableUnderWrites(t) })
			t.Run("Node", func(t *testing.T) { f.testRelayNode(t) })
		})
	}
}

// addRelayData gives Ana several humidors and collections, and The Ember Room
// several Padrón events, three of them starting at the same instant (the
// keyset's tie-break on ID).
func (f *fixture) addRelayData(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	us, err := userssql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer us.Close()
	for i := range 6 {
		if err := us.SaveHumidor(ctx, &users.Humidor{ID: ids.Derive(ids.Humidor, fmt.Sprint("relay humidor ", i)), UserID: relayAna, Name: fmt.Sprint("Travel case ", i)}); err != nil {
			t.Fatal(err)
		}
		if err := us.SaveCollection(ctx, &users.Collection{ID: ids.Derive(ids.Collection, fmt.Sprint("relay collection ", i)), UserID: relayAna, Name: fmt.Sprint("List ", i),
			Type: "custom", UpdatedAt: "2026-11-01T10:00:00.000Z"}); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := venuessql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	padron := catalogdemo.BrandID("Padrón")
	err = vs.Write(ctx, func(w venues.Writer) error {
		for i := range 6 {
			start := venuesdemo.Epoch.Add(time.Duration(40+min(i, 3)) * 24 * time.Hour)
			e := &venues.Event{ID: ids.Derive(ids.Event, fmt.Sprint("relay event ", i)), VenueID: relayParents["Venue"], BrandID: &padron,
				Name: fmt.Sprint("Padrón Evening ", i), StartsAt: start, EndsAt: start.Add(2 * time.Hour)}
			if err := w.UpsertEvent(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// connection is a connection field of the public graph.
type connection struct {
	parent, field string
	args          map[string]string // non-paging argument name -> its GraphQL type
}

const typeRef = `kind name ofType { kind name ofType { kind name ofType { kind name } } }`

type introType struct {
	Kind   string     `json:"kind"`
	Name   string     `json:"name"`
	OfType *introType `json:"ofType"`
}

func (t *introType) String() string {
	switch t.Kind {
	case "NON_NULL":
		return t.OfType.String() + "!"
	case "LIST":
		return "[" + t.OfType.String() + "]"
	}
	return t.Name
}

func (t *introType) named() string {
	for t.OfType != nil {
		t = t.OfType
	}
	return t.Name
}

// connections finds every field of the public schema whose type has edges and
// pageInfo.
func (f *fixture) connections(t *testing.T) []connection {
	t.Helper()
	var schema struct {
		Schema struct {
			Types []struct {
				Name   string `json:"name"`
				Kind   string `json:"kind"`
				Fields []struct {
					Name string     `json:"name"`
					Type *introType `json:"type"`
					Args []struct {
						Name string     `json:"name"`
						Type *introType `json:"type"`
					} `json:"args"`
				} `json:"fields"`
			} `json:"types"`
		} `json:"__schema"`
	}
	d := f.mustData(t, `{ __schema { types { name kind fields { name type { `+typeRef+` } args { name type { `+typeRef+` } } } } } }`, nil)
	if err := remarshal(d, &schema); err != nil {
		t.Fatal(err)
	}
	isConnection := map[string]bool{}
	for _, ty := range schema.Schema.Types {
		var edges, pageInfo bool
		for _, fl := range ty.Fields {
			edges = edges || fl.Name == "edges"
			pageInfo = pageInfo || fl.Name == "pageInfo"
		}
		isConnection[ty.Name] = ty.Kind == "OBJECT" && edges && pageInfo
	}
	var out []connection
	for _, ty := range schema.Schema.Types {
		if strings.HasPrefix(ty.Name, "__") {
			continue
		}
		for _, fl := range ty.Fields {
			if !isConnection[fl.Type.named()] {
				continue
			}
			c := connection{parent: ty.Name, field: fl.Name, args: map[string]string{}}
			paging := map[string]string{}
			for _, a := range fl.Args {
				switch a.Name {
				case "first", "last", "after", "before":
					paging[a.Name] = a.Type.String()
				default:
					c.args[a.Name] = a.Type.String()
				}
			}
			if want := map[string]string{"first": "Int", "last": "Int", "after": "String", "before": "String"}; fmt.Sprint(paging) != fmt.Sprint(want) {
				t.Errorf("%s.%s pages with %v, want the Relay arguments %v (first optional)", ty.Name, fl.Name, paging, want)
			}
			out = append(out, c)
		}
	}
	if len(out) < 11 {
		t.Fatalf("found %d connections by introspection: %v", len(out), out)
	}
	return out
}

// page is one page of a connection as a client sees it.
type page struct {
	ids, cursors           []string
	hasPrevious, hasNext   bool
	startCursor, endCursor any
}

// fetch runs one page of c with the paging arguments given (nil ones omitted).
func (f *fixture) fetch(t *testing.T, token string, c connection, paging map[string]any) (page, gqlResponse) {
	t.Helper()
	vars := map[string]any{}
	var decls, args []string
	for name, v := range paging {
		if v == nil {
			continue
		}
		typ := map[string]string{"first": "Int", "last": "Int", "after": "String", "before": "String"}[name]
		decls = append(decls, "$"+name+": "+typ)
		args = append(args, name+": $"+name)
		vars[name] = v
	}
	key := c.parent + "." + c.field
	for name, typ := range c.args {
		v, ok := relayArgs[key][name]
		if !ok {
			if strings.HasSuffix(typ, "!") {
				t.Fatalf("%s needs a value for its argument %s: add it to relayArgs", key, name)
			}
			continue
		}
		decls = append(decls, "$"+name+": "+typ)
		args = append(args, name+": $"+name)
		vars[name] = v
	}
	sort.Strings(decls)
	sel := c.field
	if len(args) > 0 {
		sel += "(" + strings.Join(args, ", ") + ")"
	}
	sel = "conn: " + sel + ` { edges { cursor node { id } } pageInfo { hasPreviousPage hasNextPage startCursor endCursor } }`
	path := []any{"conn"}
	if c.parent != "Query" {
		id, ok := relayParents[c.parent]
		if !ok {
			t.Fatalf("%s: add an object of type %s with items to relayParents", key, c.parent)
		}
		decls = append(decls, "$parent: ID!")
		vars["parent"] = id
		sel = "node(id: $parent) { ... on " + c.parent + " { " + sel + " } }"
		path = []any{"node", "conn"}
	}
	q := "{ " + sel + " }"
	if len(decls) > 0 {
		q = "query(" + strings.Join(decls, ", ") + ") " + q
	}
	r := f.gqlAs(t, token, q, vars)
	conn := at(r.Data, path...)
	var p page
	if conn == nil {
		return p, r
	}
	for _, e := range at(conn, "edges").([]any) {
		p.ids = append(p.ids, at(e, "node", "id").(string))
		p.cursors = append(p.cursors, at(e, "cursor").(string))
	}
	p.hasPrevious, _ = at(conn, "pageInfo", "hasPreviousPage").(bool)
	p.hasNext, _ = at(conn, "pageInfo", "hasNextPage").(bool)
	p.startCursor, p.endCursor = at(conn, "pageInfo", "startCursor"), at(conn, "pageInfo", "endCursor")
	return p, r
}

func (f *fixture) mustFetch(t *testing.T, token string, c connection, paging map[string]any) page {
	t.Helper()
	p, r := f.fetch(t, token, c, paging)
	if r.Status != 200 || len(r.Errors) > 0 || r.Data == nil {
		t.Fatalf("%s.%s %v: %d %v", c.parent, c.field, paging, r.Status, r.Errors)
	}
	// startCursor and endCursor are the page's first and last edges' cursors.
	if len(p.ids) == 0 {
		if p.startCursor != nil || p.endCursor != nil {
			t.Fatalf("%v: empty page with cursors %v %v", paging, p.startCursor, p.endCursor)
		}
	} else if p.startCursor != p.cursors[0] || p.endCursor != p.cursors[len(p.cursors)-1] {
		t.Fatalf("%v: startCursor/endCursor %v/%v are not the first and last edges' cursors", paging, p.startCursor, p.endCursor)
	}
	return p
}

// walkConnection reads c whole in pages of 100, then walks it forwards and
// backwards in pages of several sizes, checking every page's size and page
// info against the whole list.
func (f *fixture) walkConnection(t *testing.T, token string, c connection) {
	var whole []string
	var after any
	for {
		p := f.mustFetch(t, token, c, map[string]any{"first": 100, "after": after})
		whole = append(whole, p.ids...)
		if !p.hasNext {
			break
		}
		after = p.endCursor
	}
	t.Logf("%d items", len(whole))
	if len(whole) < 3 {
		t.Fatalf("only %d items: the walk needs at least 3 (add test data in addRelayData)", len(whole))
	}
	if len(slices.Compact(slices.Sorted(slices.Values(whole)))) != len(whole) {
		t.Fatalf("an item appears twice in the whole list: %v", whole)
	}
	// Without first or last: the first 20 items.
	if p := f.mustFetch(t, token, c, nil); !slices.Equal(p.ids, whole[:min(20, len(whole))]) || p.hasNext != (len(whole) > 20) || p.hasPrevious {
		t.Fatalf("default page: %v (next %v previous %v), want the first 20 of %v", p.ids, p.hasNext, p.hasPrevious, whole)
	}
	for _, n := range []int{1, 2, 7, 25} {
		// Forwards: first n after the previous page's endCursor.
		var got []string
		after = nil
		for i := 0; ; i++ {
			p := f.mustFetch(t, token, c, map[string]any{"first": n, "after": after})
			left := len(whole) - len(got)
			if len(p.ids) != min(n, left) || p.hasNext != (left > n) || p.hasPrevious != (i > 0) {
				t.Fatalf("forwards by %d, page %d: %d items, next %v, previous %v (%d left)", n, i, len(p.ids), p.hasNext, p.hasPrevious, left)
			}
			got = append(got, p.ids...)
			if !p.hasNext {
				break
			}
			after = p.endCursor
		}
		if !slices.Equal(got, whole) {
			t.Fatalf("forwards by %d: %v, want %v", n, got, whole)
		}
		// Backwards: last n before the previous page's startCursor.
		got = nil
		var before any
		for i := 0; ; i++ {
			p := f.mustFetch(t, token, c, map[string]any{"last": n, "before": before})
			left := len(whole) - len(got)
			if len(p.ids) != min(n, left) || p.hasPrevious != (left > n) || p.hasNext != (i > 0) {
				t.Fatalf("backwards by %d, page %d: %d items, previous %v, next %v (%d left)", n, i, len(p.ids), p.hasPrevious, p.hasNext, left)
			}
			got = append(slices.Clone(p.ids), got...)
			if !p.hasPrevious {
				break
			}
			before = p.startCursor
		}
		if !slices.Equal(got, whole) {
			t.Fatalf("backwards by %d: %v, want %v", n, got, whole)
		}
	}
	// Both bounds: the items strictly between two cursors.
	if len(whole) >= 4 {
		all := f.mustFetch(t, token, c, map[string]any{"first": 100})
		p := f.mustFetch(t, token, c, map[string]any{"first": 100, "after": all.cursors[0], "before": all.cursors[3]})
		if !slices.Equal(p.ids, whole[1:3]) {
			t.Fatalf("between the 1st and 4th cursors: %v, want %v", p.ids, whole[1:3])
		}
	}
}

// testConnectionErrors: first with last, sizes out of range, and cursors of
// another list are refused with a code.
func (f *fixture) testConnectionErrors(t *testing.T, token string) {
	brands := connection{parent: "Query", field: "brands"}
	products := connection{parent: "Query", field: "products"}
	humidors := connection{parent: "Query", field: "myHumidors"}
	cigarsOf := connection{parent: "Brand", field: "cigars"}
	search := connection{parent: "Query", field: "searchCigars", args: map[string]string{"query": "String!"}}
	bp := f.mustFetch(t, token, brands, map[string]any{"first": 2})
	hp := f.mustFetch(t, token, humidors, map[string]any{"first": 2})
	cp := f.mustFetch(t, token, cigarsOf, map[string]any{"first": 2})
	sp := f.mustFetch(t, token, search, map[string]any{"first": 2})
	benToken := f.mint(t, relayBen, relayScopes...)
	cohiba := catalogdemo.BrandID("Cohiba")

	tests := []struct {
		name   string
		token  string
		c      connection
		paging map[string]any
		code   string
	}{
		{"first and last", token, brands, map[string]any{"first": 2, "last": 2}, "BAD_USER_INPUT"},
		{"last 0", token, brands, map[string]any{"last": 0}, "BAD_USER_INPUT"},
		{"first -1", token, humidors, map[string]any{"first": -1}, "BAD_USER_INPUT"},
		{"last 101", token, brands, map[string]any{"last": 101}, "PAGE_SIZE_EXCEEDED"},
		{"first 101", token, search, map[string]any{"first": 101}, "PAGE_SIZE_EXCEEDED"},
		{"garbage after", token, brands, map[string]any{"after": "not-a-cursor"}, "INVALID_CURSOR"},
		{"garbage before", token, products, map[string]any{"last": 2, "before": "djJ4eXo"}, "INVALID_CURSOR"},
		{"brands cursor to products", token, products, map[string]any{"after": bp.endCursor}, "INVALID_CURSOR"},
		{"brands cursor to products, backwards", token, products, map[string]any{"last": 2, "before": bp.startCursor}, "INVALID_CURSOR"},
		{"brands cursor to a brand's cigars", token, cigarsOf, map[string]any{"after": bp.endCursor}, "INVALID_CURSOR"},
		{"brands cursor to a search", token, search, map[string]any{"after": bp.endCursor}, "INVALID_CURSOR"},
		{"search cursor to brands", token, brands, map[string]any{"before": sp.startCursor, "last": 1}, "INVALID_CURSOR"},
		{"humidors cursor to brands", token, brands, map[string]any{"after": hp.endCursor}, "INVALID_CURSOR"},
		{"Ana's humidors cursor used by Ben", benToken, humidors, map[string]any{"after": hp.endCursor}, "INVALID_CURSOR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := f.fetch(t, tt.token, tt.c, tt.paging)
			if code(r) != tt.code {
				t.Fatalf("%v: %d %v, want %s", tt.paging, r.Status, r.Errors, tt.code)
			}
			if msg, _ := r.Errors[0]["message"].(string); msg == "" {
				t.Fatal("no message")
			}
		})
	}
	t.Run("another brand's cigars cursor", func(t *testing.T) {
		r := f.gqlAs(t, token, `query($b: ID!, $c: String) { node(id: $b) { ... on Brand { cigars(first: 2, after: $c) { edges { cursor } } } } }`,
			map[string]any{"b": cohiba, "c": cp.endCursor})
		if code(r) != "INVALID_CURSOR" {
			t.Fatalf("%v", r.Errors)
		}
	})
	t.Run("another search's cursor", func(t *testing.T) {
		r := f.gqlAs(t, token, `query($c: String) { searchCigars(query: "cohiba", first: 2, after: $c) { edges { cursor } } }`, map[string]any{"c": sp.endCursor})
		if code(r) != "INVALID_CURSOR" {
			t.Fatalf("%v", r.Errors)
		}
	})
}

// testStableUnderWrites: events added between two pages, before and after the
// cursor, neither repeat nor hide an item of the walk.
func (f *fixture) testStableUnderWrites(t *testing.T) {
	events := connection{parent: "Venue", field: "events"}
	p1 := f.mustFetch(t, "", events, map[string]any{"first": 3})
	ctx := context.Background()
	vs, err := venuessql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	var early, late string
	err = vs.Write(ctx, func(w venues.Writer) error {
		for i, start := range []time.Time{venuesdemo.Epoch.Add(-48 * time.Hour), venuesdemo.Epoch.Add(400 * 24 * time.Hour)} {
			e := &venues.Event{ID: ids.Derive(ids.Event, fmt.Sprint("relay write ", i)), VenueID: relayParents["Venue"], Name: "Added", StartsAt: start, EndsAt: start.Add(time.Hour)}
			if i == 0 {
				early = e.ID
			} else {
				late = e.ID
			}
			if err := w.UpsertEvent(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(p1.ids)
	after := p1.endCursor
	for {
		p := f.mustFetch(t, "", events, map[string]any{"first": 3, "after": after})
		got = append(got, p.ids...)
		if !p.hasNext {
			break
		}
		after = p.endCursor
	}
	if slices.Contains(got, early) || !slices.Contains(got, late) || len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Fatalf("walk across writes: %v (early %s must be absent, late %s present, no repeats)", got, early, late)
	}
}

// testRelayNode: every type with an ID is a Node; the connected user's data
// answers only its owner with the data's scope, and null to anyone else, the
// same answer as for an ID that does not exist; an ID never resolves as
// another type.
func (f *fixture) testRelayNode(t *testing.T) {
	// Every object type of the public schema with an id field implements Node,
	// but the public views of sessions and their users (feed items sharing the
	// ID of a SmokeSession or a User; see the README).
	var schema struct {
		Schema struct {
			Types []struct {
				Name       string `json:"name"`
				Kind       string `json:"kind"`
				Fields     []struct{ Name string }
				Interfaces []struct{ Name string }
			} `json:"types"`
		} `json:"__schema"`
	}
	if err := remarshal(f.mustData(t, `{ __schema { types { name kind fields { name } interfaces { name } } } }`, nil), &schema); err != nil {
		t.Fatal(err)
	}
	views := map[string]bool{"PublicSession": true, "PublicUserSummary": true}
	for _, ty := range schema.Schema.Types {
		if ty.Kind != "OBJECT" || strings.HasPrefix(ty.Name, "__") || views[ty.Name] {
			continue
		}
		hasID := slices.ContainsFunc(ty.Fields, func(f struct{ Name string }) bool { return f.Name == "id" })
		isNode := slices.ContainsFunc(ty.Interfaces, func(i struct{ Name string }) bool { return i.Name == "Node" })
		if hasID != isNode {
			t.Errorf("%s: has id %v, implements Node %v", ty.Name, hasID, isNode)
		}
	}

	own := map[string]struct{ scope, list string }{
		"Collection":   {"collections:read", "myCollections"},
		"Humidor":      {"humidor:read", "myHumidors"},
		"SmokeSession": {"sessions:read", "mySmokeSessions"},
		"CheckIn":      {"checkins:read", "myCheckIns"},
	}
	anaAll, benAll := f.mint(t, relayAna, relayScopes...), f.mint(t, relayBen, relayScopes...)
	anaIDs := map[string]string{}
	for typ, o := range own {
		r := f.gqlAs(t, anaAll, `{ l: `+o.list+`(first: 1) { edges { node { id } } } }`, nil)
		id, _ := at(r.Data, "l", "edges", 0, "node", "id").(string)
		if id == "" {
			t.Fatalf("%s: no item of Ana's: %v", o.list, r.Errors)
		}
		anaIDs[typ] = id
	}
	const q = `query($id: ID!) { node(id: $id) { __typename id ... on Humidor { name } ... on SmokeSession { visibility } ... on CheckIn { checkedInAt } ... on Collection { name } ... on Brand { name } } }`
	answer := func(token, id string) string {
		r := f.gqlAs(t, token, q, map[string]any{"id": id})
		return fmt.Sprint(r.Status, " ", toJSON(r.Data), " ", toJSON(r.Errors))
	}
	for typ, o := range own {
		t.Run(typ, func(t *testing.T) {
			id := anaIDs[typ]
			prefix, _ := ids.Prefix(id)
			missing := prefix + "_0000000000000000"
			null := answer(anaAll, missing)
			if null != `200 {"node":null} null` {
				t.Fatalf("unknown ID: %s", null)
			}
			r := f.gqlAs(t, f.mint(t, relayAna, o.scope), q, map[string]any{"id": id})
			if len(r.Errors) > 0 || at(r.Data, "node", "__typename") != typ || at(r.Data, "node", "id") != id {
				t.Fatalf("owner with %s: %v %v", o.scope, r.Data, r.Errors)
			}
			others := relaySlice(relayScopes, o.scope)
			for name, token := range map[string]string{
				"anonymous": "", "Ben with every scope": benAll, "Ana without " + o.scope: f.mint(t, relayAna, others...),
			} {
				if got := answer(token, id); got != null {
					t.Errorf("%s: %s, want the unknown ID's answer %s", name, got, null)
				}
			}
		})
	}
	t.Run("an ID never resolves as another type", func(t *testing.T) {
		all := map[string]string{"Brand": relayParents["Brand"], "Venue": relayParents["Venue"], "User": relayAna}
		for k, v := range anaIDs {
			all[k] = v
		}
		prefixes := []string{ids.Brand, ids.Cigar, ids.Product, ids.Venue, ids.Event, ids.User, ids.Collection, ids.Humidor, ids.SmokeSession, ids.CheckIn}
		for typ, id := range all {
			r := f.gqlAs(t, anaAll, q, map[string]any{"id": id})
			if at(r.Data, "node", "__typename") != typ {
				t.Errorf("node(%s) = %v, want a %s", id, r.Data, typ)
			}
			p, _ := ids.Prefix(id)
			for _, other := range prefixes {
				if other == p {
					continue
				}
				swapped := other + strings.TrimPrefix(id, p)
				if got := answer(anaAll, swapped); got != `200 {"node":null} null` {
					t.Errorf("%s's body under prefix %s: %s", typ, other, got)
				}
			}
		}
		r := f.gqlAs(t, anaAll, `query($b: ID!, $h: ID!) { cigar(id: $b) { id } brand(id: $h) { id } venue(id: $b) { id } user(id: $h) { id } }`,
			map[string]any{"b": relayParents["Brand"], "h": anaIDs["Humidor"]})
		if toJSON(r.Data) != `{"brand":null,"cigar":null,"user":null,"venue":null}` {
			t.Errorf("typed lookups of another type's ID: %v %v", r.Data, r.Errors)
		}
	})
}

func relaySlice(all []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == drop })
}

func remarshal(v, out any) error {
	return json.Unmarshal([]byte(toJSON(v)), out)
}
