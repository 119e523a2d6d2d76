package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

var internalKey = []byte("test-internal-key-0123456789abcdef")

// fixture is the one-process platform on a real HTTP server, with a counter of
// every call the router makes to a subgraph.
type fixture struct {
	srv           *httptest.Server
	p             *platform.Platform
	key           string
	cfg           sqldb.Config
	subgraphCalls atomic.Int64
}

const publicURL = "https://vitola.test"

type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

func open(t *testing.T, cfg sqldb.Config) *fixture { return openWith(t, cfg, nil) }

// openWith is open with options a test changes first (change may be nil).
func openWith(t *testing.T, cfg sqldb.Config, change func(*platform.Options)) *fixture {
	t.Helper()
	f := &fixture{cfg: cfg}
	o := platform.Options{
		Store: cfg, InternalKey: internalKey, Demo: true, PublicURL: publicURL, Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
		// The test's image server is on loopback, which production refuses.
		FetchAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		WrapSubgraphTransport: func(rt http.RoundTripper) http.RoundTripper {
			return countingTransport{base: rt, n: &f.subgraphCalls}
		},
	}
	if change != nil {
		change(&o)
	}
	p, err := platform.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	f.p = p
	f.srv = httptest.NewServer(p.API)
	t.Cleanup(f.srv.Close)
	_, f.key, err = p.Keys.CreateKey(context.Background(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type gqlResponse struct {
	Status int
	Raw    string           `json:"-"` // the body as sent (gqlAs), for byte-for-byte comparisons
	Data   map[string]any   `json:"data"`
	Errors []map[string]any `json:"errors"`
}

func (f *fixture) post(t *testing.T, key, body string) gqlResponse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	// The specification's media type: a request that fails before execution
	// answers 400 (in application/json it would answer 200 with errors).
	req.Header.Set("Accept", "application/graphql-response+json")
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := gqlResponse{Status: res.StatusCode}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("response is not JSON (%d): %s", res.StatusCode, raw)
	}
	return out
}

func (f *fixture) query(t *testing.T, q string, vars map[string]any) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	return f.post(t, f.key, string(body))
}

// mustData runs q and fails on any error.
func (f *fixture) mustData(t *testing.T, q string, vars map[string]any) map[string]any {
	t.Helper()
	r := f.query(t, q, vars)
	if r.Status != 200 || len(r.Errors) > 0 {
		t.Fatalf("query failed (%d): %v", r.Status, r.Errors)
	}
	return r.Data
}

// at walks a decoded JSON value: at(v, "a", 0, "b").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func code(r gqlResponse) string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := at(r.Errors[0], "extensions", "code").(string)
	return c
}

func TestPlatform(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := open(t, cfg)
			t.Run("SearchCigarsReturnsSeededCigarsWithBrands", f.testSearch)
			t.Run("LimitsRejectBeforeAnySubgraphCall", f.testLimits)
			t.Run("CostExamples", f.testCostExamples)
			t.Run("FederatedJoins", f.testJoins)
			t.Run("NodeResolvesEveryType", f.testNode)
			t.Run("Pagination", f.testPagination)
			t.Run("IntrospectionIsCurated", f.testIntrospection)
			t.Run("DeveloperKeys", f.testKeys)
			t.Run("SubgraphsAnswerOnlyInternalCalls", f.testInternalTrust)
			t.Run("Health", f.testHealth)
			t.Run("GraphiQLForBrowsers", f.testGraphiQL)
			t.Run("RESTSearch", f.testRESTSearch)
			t.Run("RESTGetCigarAndProducts", f.testRESTGet)
			t.Run("RESTResolve", f.testRESTResolve)
			t.Run("RESTAndGraphQLGiveTheSameData", f.testSameData)
			t.Run("ConnectedUser", f.testConnectedUser)
			t.Run("BusinessFeed", f.testBusinessFeed)
			t.Run("PublishableKeys", f.testPublishableKeys)
			t.Run("RouterInternalDoor", f.testRouterInternalDoor)
			t.Run("InternalSubgraphsAreUnreachable", f.testInternalSubgraphsUnreachable)
			t.Run("PaidFingerprint", f.testPaidFingerprint)
			t.Run("FiftyIdenticalRequestsChargeOnce", f.testConcurrentIdempotency)
			t.Run("Recognize", f.testRecognize)
			t.Run("Identify", f.testIdentify)
			t.Run("InlineImages", f.testInlineImages)
		})
	}
}

func (f *fixture) testSearch(t *testing.T) {
	d := f.mustData(t, `query($q: String!) { searchCigars(query: $q, first: 5) { edges { cursor node { id name origin wrapper { label } brand { id name country } } } pageInfo { hasNextPage endCursor } } }`,
		map[string]any{"q": "padron 1964"})
	edges, _ := at(d, "searchCigars", "edges").([]any)
	if len(edges) == 0 {
		t.Fatal("no cigars for 'padron 1964'")
	}
	for _, e := range edges {
		if at(e, "node", "brand", "name") != "Padrón" || !ids.Valid(at(e, "node", "id").(string), ids.Cigar) {
			t.Fatalf("unexpected edge %v", e)
		}
		if w, _ := at(e, "node", "wrapper").([]any); len(w) == 0 {
			t.Fatalf("cigar without wrapper: %v", e)
		}
	}
}

func (f *fixture) testLimits(t *testing.T) {
	rep := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.ReplaceAll(format, "#", string(rune('a'+i))) + " ")
		}
		return b.String()
	}
	tests := []struct {
		name, query, code string
	}{
		// brand → cigars → edges → node → brand → cigars → edges → node → name: 9 levels
		{"depth 9", `{ brand(id: "x") { cigars(first: 1) { edges { node { brand { cigars(first: 1) { edges { node { name } } } } } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"21 aliases", `{ brand(id: "x") { ` + rep(21, "n#: name") + ` } }`, "ALIAS_LIMIT_EXCEEDED"},
		{"11 root fields", `{ ` + rootFields(11) + ` }`, "ROOT_FIELD_LIMIT_EXCEEDED"},
		{"cost over 1000", `{ brands(first: 100) { edges { node { cigars(first: 100) { edges { node { name } } } } } } }`, "COST_LIMIT_EXCEEDED"},
		{"first over 100", `{ searchCigars(query: "padron", first: 101) { edges { cursor } } }`, "PAGE_SIZE_EXCEEDED"},
		{"no mutation root", `mutation { brand }`, "GRAPHQL_VALIDATION_FAILED"},
		{"federation internals", `{ _entities(representations: [{__typename: "Brand", id: "x"}]) { __typename } }`, "GRAPHQL_VALIDATION_FAILED"},
		{"inaccessible field", `{ user(id: "x") { createdAt } }`, "GRAPHQL_VALIDATION_FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.subgraphCalls.Load()
			r := f.query(t, tt.query, nil)
			if r.Status != http.StatusBadRequest || code(r) != tt.code {
				t.Fatalf("got %d %s %v, want 400 %s", r.Status, code(r), r.Errors, tt.code)
			}
			if msg, _ := r.Errors[0]["message"].(string); msg == "" {
				t.Fatal("error without a message")
			}
			if n := f.subgraphCalls.Load() - before; n != 0 {
				t.Fatalf("%d subgraph calls for a rejected operation", n)
			}
		})
	}
	t.Run("batch", func(t *testing.T) {
		before := f.subgraphCalls.Load()
		r := f.post(t, f.key, `[{"query":"{ brands { edges { cursor } } }"}]`)
		if r.Status != 400 || code(r) != "BATCHING_DISABLED" || f.subgraphCalls.Load() != before {
			t.Fatalf("batch: %d %v", r.Status, r.Errors)
		}
	})
	t.Run("body over 1 MiB", func(t *testing.T) {
		r := f.post(t, f.key, `{"query":"{ __typename }","variables":{"pad":"`+strings.Repeat("x", 1<<20)+`"}}`)
		if r.Status != http.StatusRequestEntityTooLarge || code(r) != "BAD_REQUEST" {
			t.Fatalf("large body: %d %v", r.Status, r.Errors)
		}
	})
	t.Run("modest query passes", func(t *testing.T) {
		before := f.subgraphCalls.Load()
		f.mustData(t, `{ brands(first: 10) { edges { node { name cigars(first: 10) { edges { node { name } } } } } } }`, nil)
		if f.subgraphCalls.Load() == before {
			t.Fatal("no subgraph call for an accepted operation")
		}
	})
	t.Run("limit error names the measure and maximum", func(t *testing.T) {
		r := f.query(t, `{ brands(first: 100) { edges { node { cigars(first: 100) { edges { node { name } } } } } } }`, nil)
		// brands 1 + 100 edges × (BrandEdge 1 + Brand 1 + cigars (1 + 100 edges × (CigarEdge 1 + Cigar 1)))
		ext, _ := r.Errors[0]["extensions"].(map[string]any)
		if ext["maximum"] != float64(1000) || ext["actual"] != float64(1+100*(1+1+(1+100*(1+1)))) {
			t.Fatalf("extensions = %v", ext)
		}
	})
}

func rootFields(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("b" + string(rune('a'+i)) + `: brand(id: "x") { id } `)
	}
	return b.String()
}

func (f *fixture) testJoins(t *testing.T) {
	padron := catalogdemo.BrandID("Padrón")
	d := f.mustData(t, `query($id: ID!) { brand(id: $id) { name events(first: 5) { edges { node { name venue { name city } brand { name } } } } } }`, map[string]any{"id": padron})
	events, _ := at(d, "brand", "events", "edges").([]any)
	if at(d, "brand", "name") != "Padrón" || len(events) < 2 {
		t.Fatalf("brand events: %v", d)
	}
	for _, e := range events {
		if at(e, "node", "brand", "name") != "Padrón" || at(e, "node", "venue", "name") == nil {
			t.Fatalf("event %v", e)
		}
	}
	d = f.mustData(t, `{ events(first: 20) { edges { node { name brand { id name country } } } } }`, nil)
	withBrand := 0
	for _, e := range at(d, "events", "edges").([]any) {
		if b := at(e, "node", "brand"); b != nil {
			withBrand++
			if at(b, "name") == nil || at(b, "country") == nil {
				t.Fatalf("event brand not completed by the catalog: %v", e)
			}
		}
	}
	if withBrand < 5 {
		t.Fatalf("only %d events with a brand", withBrand)
	}
}

func (f *fixture) testNode(t *testing.T) {
	d := f.mustData(t, `{ searchCigars(query: "hemingway", first: 1) { edges { node { id } } } products(first: 1) { edges { node { id } } } }`, nil)
	cigar := at(d, "searchCigars", "edges", 0, "node", "id").(string)
	product := at(d, "products", "edges", 0, "node", "id").(string)
	venue := venuesdemo.VenueID("The Ember Room")
	d = f.mustData(t, `query($v: ID!) { venue(id: $v) { events(first: 1) { edges { node { id } } } } }`, map[string]any{"v": venue})
	event := at(d, "venue", "events", "edges", 0, "node", "id").(string)

	tests := []struct {
		id, typename, field string
	}{
		{catalogdemo.BrandID("Cohiba"), "Brand", "name"},
		{cigar, "Cigar", "name"},
		{product, "Product", "name"},
		{venue, "Venue", "name"},
		{event, "Event", "name"},
		{usersdemo.UserID("ana@vitola.example"), "User", "displayName"},
	}
	const q = `query($id: ID!) { node(id: $id) { id __typename ... on Brand { name } ... on Cigar { name } ... on Product { name } ... on Venue { name } ... on Event { name } ... on User { displayName } } }`
	for _, tt := range tests {
		t.Run(tt.typename, func(t *testing.T) {
			d := f.mustData(t, q, map[string]any{"id": tt.id})
			if at(d, "node", "__typename") != tt.typename || at(d, "node", "id") != tt.id {
				t.Fatalf("node(%s) = %v", tt.id, d)
			}
			if v, _ := at(d, "node", tt.field).(string); v == "" {
				t.Fatalf("node(%s).%s empty: %v", tt.id, tt.field, d)
			}
		})
	}
	for _, id := range []string{"brd_0000000000000000", "cig_0000000000000000", "ven_0000000000000000", "evt_0000000000000000", "usr_0000000000000000", "xyz_0000000000000000", "garbage"} {
		t.Run("unknown "+id, func(t *testing.T) {
			r := f.query(t, q, map[string]any{"id": id})
			if r.Status != 200 || len(r.Errors) > 0 || r.Data["node"] != nil {
				t.Fatalf("node(%s) = %d %v %v, want a clean null", id, r.Status, r.Data, r.Errors)
			}
		})
	}
	t.Run("private profile shows id and displayName only", func(t *testing.T) {
		d := f.mustData(t, `query($id: ID!) { user(id: $id) { id displayName bio firstName } }`, map[string]any{"id": usersdemo.UserID("hidden@vitola.example")})
		if at(d, "user", "displayName") == nil || at(d, "user", "bio") != nil || at(d, "user", "firstName") != nil {
			t.Fatalf("private profile leaked: %v", d)
		}
	})
}

func (f *fixture) testPagination(t *testing.T) {
	seen := map[string]bool{}
	after := any(nil)
	for page := 0; ; page++ {
		d := f.mustData(t, `query($after: String) { brands(first: 25, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`, map[string]any{"after": after})
		for _, e := range at(d, "brands", "edges").([]any) {
			id := at(e, "node", "id").(string)
			if seen[id] {
				t.Fatalf("brand %s repeated", id)
			}
			seen[id] = true
		}
		if at(d, "brands", "pageInfo", "hasNextPage") != true {
			break
		}
		after = at(d, "brands", "pageInfo", "endCursor")
		if page > 10 {
			t.Fatal("paging does not end")
		}
	}
	f2, _ := catalogdemo.LoadFacts()
	if len(seen) != len(f2.Brands) {
		t.Fatalf("paged %d brands, want %d", len(seen), len(f2.Brands))
	}
	r := f.query(t, `{ brands(first: 5, after: "not-a-cursor") { edges { cursor } } }`, nil)
	if code(r) != "INVALID_CURSOR" {
		t.Fatalf("tampered cursor: %v", r.Errors)
	}
	r = f.query(t, `{ brands(first: 0) { edges { cursor } } }`, nil)
	if code(r) != "BAD_USER_INPUT" {
		t.Fatalf("first 0: %v", r.Errors)
	}
}

const graphiqlIntrospection = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name } types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

func (f *fixture) testIntrospection(t *testing.T) {
	before := f.subgraphCalls.Load()
	d := f.mustData(t, graphiqlIntrospection, nil)
	if f.subgraphCalls.Load() != before {
		t.Fatal("introspection called a subgraph")
	}
	raw, _ := json.Marshal(d)
	for _, hidden := range []string{`"_entities"`, `"_service"`, `"_Any"`, `"_Entity"`, `"_Service"`, `"link__Import"`, `"oauthJWKS"`, `"oauthToken"`, `"searchPage"`, `"CigarDocument"`, `"catalogNumber"`} {
		if bytes.Contains(raw, []byte(hidden)) {
			t.Errorf("introspection shows %s", hidden)
		}
	}
	for _, typ := range at(d, "__schema", "types").([]any) {
		if at(typ, "name") != "User" {
			continue
		}
		for _, f := range at(typ, "fields").([]any) {
			if at(f, "name") == "createdAt" {
				t.Error("the @inaccessible User.createdAt is visible")
			}
		}
	}
	if at(d, "__schema", "mutationType") != nil {
		t.Error("a mutation root is visible")
	}
	for _, want := range []string{`"searchCigars"`, `"node"`, `"venues"`, `"user"`, `"productByBarcode"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("introspection lacks %s", want)
		}
	}
}

// The internal subgraphs' operations cannot be reached through the public graph:
// the router plans only the composed public schema, which has no credits field
// and no mutation root.
func (f *fixture) testInternalSubgraphsUnreachable(t *testing.T) {
	before := f.subgraphCalls.Load()
	for _, q := range []string{
		`{ credits { balance } }`,
		`mutation { reserveCredits(amount: 1, reference: "x") { id } }`,
		`mutation { releaseCredits(reservationId: "rsv_0000000000000000") { balance } }`,
	} {
		if r := f.query(t, q, nil); r.Status != 400 || code(r) != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("%s through the public graph: %d %v", q, r.Status, r.Errors)
		}
	}
	if f.subgraphCalls.Load() != before {
		t.Fatal("a refused operation reached a subgraph")
	}

	// Reached directly, payments moves credits only for the shim acting for a
	// key: the router's token, or the shim's without a key, is refused.
	srv := httptest.NewServer(f.p.Subgraphs["payments"])
	defer srv.Close()
	router, _ := trust.NewIssuer(internalKey, "router")
	shim, _ := trust.NewIssuer(internalKey, "shim")
	for _, tt := range []struct {
		name   string
		issuer *trust.Issuer
		id     trust.Identity
		want   string
	}{
		{"router's token", router, trust.Identity{KeyID: "key_x"}, `"code":"FORBIDDEN"`},
		{"shim's token without a key", shim, trust.Identity{}, `"code":"FORBIDDEN"`},
		{"shim's token for a key", shim, trust.Identity{KeyID: "key_x"}, `"balance":0`},
	} {
		token, _ := tt.issuer.Token(tt.id)
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(`{"query":"{ credits { balance } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(trust.Header, token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(body), tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, body, tt.want)
		}
	}
}

func (f *fixture) testKeys(t *testing.T) {
	const q = `{"query":"{ __typename }"}`
	for name, key := range map[string]string{"missing": "", "unknown": "vk_0000000000000000_" + strings.Repeat("A", 43), "malformed": "hello"} {
		r := f.post(t, key, q)
		if r.Status != 401 || code(r) != "UNAUTHENTICATED" {
			t.Errorf("%s key: %d %v", name, r.Status, r.Errors)
		}
	}
	k, plain, err := f.p.Keys.CreateKey(context.Background(), "short-lived", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.post(t, plain, q); r.Status != 200 {
		t.Fatalf("new key: %d %v", r.Status, r.Errors)
	}
	if err := f.p.Keys.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	// Any verdict cached before the revocation has expired CacheTTL after
	// it, so a request that starts then is refused, however busy the machine.
	time.Sleep(access.CacheTTL)
	if r := f.post(t, plain, q); r.Status != 401 {
		t.Fatalf("revoked key still accepted after the cache window: %d", r.Status)
	}
}

func (f *fixture) testInternalTrust(t *testing.T) {
	srv := httptest.NewServer(f.p.Subgraphs["catalog"])
	defer srv.Close()
	entities := `{"query":"{ _entities(representations: [{__typename: \"Brand\", id: \"x\"}]) { __typename } }"}`
	forger, _ := trust.NewIssuer([]byte("someone-elses-key-0123456789abcdef"), "router")
	forged, _ := forger.Token(trust.Identity{KeyID: "key_x"})
	genuine, _ := trust.NewIssuer(internalKey, "router")
	good, _ := genuine.Token(trust.Identity{})
	for _, tt := range []struct {
		name, token string
		status      int
	}{{"no token", "", 401}, {"forged token", forged, 401}, {"router's token", good, 200}} {
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(entities))
		req.Header.Set("Content-Type", "application/json")
		if tt.token != "" {
			req.Header.Set(trust.Header, tt.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, res.StatusCode, tt.status)
		}
	}
}

// testRouterInternalDoor: the router takes the shim's internal token instead of
// a developer key, and nothing else that looks like one.
func (f *fixture) testRouterInternalDoor(t *testing.T) {
	forger, _ := trust.NewIssuer([]byte("someone-elses-key-0123456789abcdef"), "shim")
	forged, _ := forger.Token(trust.Identity{KeyID: "key_x"})
	notShim, _ := trust.NewIssuer(internalKey, "catalog")
	wrongCaller, _ := notShim.Token(trust.Identity{KeyID: "key_x"})
	shim, _ := trust.NewIssuer(internalKey, "shim")
	good, _ := shim.Token(trust.Identity{KeyID: "key_x"})
	for _, tt := range []struct {
		name, token string
		status      int
	}{{"forged", forged, 401}, {"another component's", wrongCaller, 401}, {"the shim's", good, 200}} {
		req, _ := http.NewRequest("POST", f.srv.URL+"/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(trust.Header, tt.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%s token: %d, want %d", tt.name, res.StatusCode, tt.status)
		}
	}
}

func (f *fixture) testHealth(t *testing.T) {
	if res, err := http.Get(f.srv.URL + "/health"); err != nil || res.StatusCode != 200 {
		t.Fatalf("liveness: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	res, err := http.Get(f.srv.URL + "/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var h struct {
		Status     string
		Components map[string]struct{ Status string }
	}
	json.NewDecoder(res.Body).Decode(&h)
	if res.StatusCode != 200 || h.Status != "ok" {
		t.Fatalf("health %d %+v", res.StatusCode, h)
	}
	for _, c := range []string{"access", "kv", "catalog", "users", "venues", "payments", "matching"} {
		if h.Components[c].Status != "ok" {
			t.Errorf("component %s: %+v", c, h.Components[c])
		}
	}
}

func (f *fixture) testGraphiQL(t *testing.T) {
	get := func(accept string) *http.Response {
		req, _ := http.NewRequest("GET", f.srv.URL+"/graphql", nil)
		req.Header.Set("Accept", accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	// Anonymous: the page only sends the key its user pastes.
	if res := get("text/html,application/xhtml+xml"); res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GraphiQL: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// Anything else that GETs /graphql is a GraphQL request, behind the same
	// key check as a POST (router's TestGET covers queries over GET).
	if res := get("application/json"); res.StatusCode != 401 {
		t.Fatalf("GET for JSON without a key: %d, want 401", res.StatusCode)
	}
}

// rest sends a GET with the fixture's key and decodes the JSON body.
func (f *fixture) rest(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	req.Header.Set("x-service-key", f.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("%s: not JSON: %v", path, err)
	}
	return res.StatusCode, body
}

func idsOf(list []any) []string {
	out := make([]string, len(list))
	for i, c := range list {
		out[i], _ = at(c, "id").(string)
	}
	return out
}

func (f *fixture) testRESTSearch(t *testing.T) {
	status, body := f.rest(t, "/v1/cigars/search?q=padron&limit=7")
	data, _ := body["data"].([]any)
	if status != 200 || len(data) != 7 || at(body, "pagination", "hasNextPage") != true {
		t.Fatalf("search: %d %v", status, body)
	}
	for _, c := range data {
		for _, k := range []string{"wrapper", "binder", "filler"} {
			if _, ok := at(c, k).([]any); !ok {
				t.Fatalf("cigar without %s array: %v", k, c)
			}
		}
	}

	// Paging by cursor visits every match once, in the same order as GraphQL.
	var rest []string
	path := "/v1/cigars/search?q=padron&limit=7"
	for i := 0; ; i++ {
		status, body := f.rest(t, path)
		if status != 200 {
			t.Fatalf("page %d: %d %v", i, status, body)
		}
		rest = append(rest, idsOf(body["data"].([]any))...)
		next, _ := at(body, "pagination", "endCursor").(string)
		if at(body, "pagination", "hasNextPage") != true {
			if next != "" {
				t.Fatal("endCursor on the last page")
			}
			break
		}
		path = "/v1/cigars/search?q=padron&limit=7&cursor=" + next
	}
	d := f.mustData(t, `{ searchCigars(query: "padron", first: 100) { edges { node { id } } } }`, nil)
	var gql []string
	for _, e := range at(d, "searchCigars", "edges").([]any) {
		gql = append(gql, at(e, "node", "id").(string))
	}
	if strings.Join(rest, ",") != strings.Join(gql, ",") || len(rest) < 10 {
		t.Fatalf("REST paging and GraphQL differ:\nREST %v\nGQL  %v", rest, gql)
	}

	_, first := f.rest(t, "/v1/cigars/search?q=padron&limit=2")
	cursor := at(first, "pagination", "endCursor").(string)
	tests := []struct {
		path, code string
	}{
		{"/v1/cigars/search", "invalid_query"},
		{"/v1/cigars/search?q=p", "invalid_query"},
		{"/v1/cigars/search?q=" + strings.Repeat("x", 201), "invalid_query"},
		{"/v1/cigars/search?q=padron&limit=0", "invalid_limit"},
		{"/v1/cigars/search?q=padron&limit=101", "invalid_limit"},
		{"/v1/cigars/search?q=padron&limit=ten", "invalid_limit"},
		{"/v1/cigars/search?q=padron&cursor=garbage", "invalid_cursor"},
		{"/v1/cigars/search?q=padron&cursor=" + cursor[:len(cursor)-2] + "AA", "invalid_cursor"},
		{"/v1/cigars/search?q=fuente&cursor=" + cursor, "invalid_cursor"},
	}
	for _, tt := range tests {
		status, body := f.rest(t, tt.path)
		if status != 400 || body["error"] != tt.code || body["message"] == "" {
			t.Errorf("%s: %d %v, want 400 %s", tt.path, status, body, tt.code)
		}
	}
	// Two hundred characters are fine; characters, not bytes.
	if status, body := f.rest(t, "/v1/cigars/search?q="+strings.Repeat("ó", 200)); status != 200 {
		t.Errorf("200 two-byte characters: %d %v", status, body)
	}

	status, body = f.rest(t, "/v1/cigars/search?q=churchill&brand=RyJ&limit=100")
	for _, c := range body["data"].([]any) {
		if at(c, "brand", "name") != "Romeo y Julieta" {
			t.Fatalf("brand filter let through %v", c)
		}
	}
	if status != 200 || len(body["data"].([]any)) == 0 {
		t.Fatalf("brand filter: %d %v", status, body)
	}
	if _, body := f.rest(t, "/v1/cigars/search?q=churchill&brand=Nobody+Cigars"); len(body["data"].([]any)) != 0 {
		t.Fatal("unknown brand matched cigars")
	}
}

func (f *fixture) testRESTGet(t *testing.T) {
	_, body := f.rest(t, "/v1/cigars/search?q=hemingway+short+story&limit=1")
	id := at(body, "data", 0, "id").(string)
	status, body := f.rest(t, "/v1/cigars/"+id)
	if status != 200 || at(body, "data", "id") != id || at(body, "data", "brand", "name") != "Arturo Fuente" {
		t.Fatalf("get cigar: %d %v", status, body)
	}
	for _, bad := range []string{"cig_0000000000000000", "nope", strings.Repeat("x", 300)} {
		if status, body := f.rest(t, "/v1/cigars/"+bad); status != 404 || body["error"] != "cigar_not_found" {
			t.Errorf("cigar %q: %d %v", bad, status, body)
		}
	}

	d := f.mustData(t, `{ products(first: 1) { edges { node { id gtin } } } }`, nil)
	pid, gtin := at(d, "products", "edges", 0, "node", "id").(string), at(d, "products", "edges", 0, "node", "gtin").(string)
	if status, body := f.rest(t, "/v1/products/"+pid); status != 200 || at(body, "data", "gtin") != gtin {
		t.Fatalf("product: %d %v", status, body)
	}
	status, body = f.rest(t, "/v1/products/barcode/"+gtin[1:]) // as EAN-13
	if status != 200 || at(body, "data", "id") != pid || at(body, "data", "contents", 0, "cigar", "name") == nil {
		t.Fatalf("product by barcode: %d %v", status, body)
	}
	valid := "400638133393" + string(catalog.CheckDigit("400638133393"))
	wrong := valid[:12] + string('0'+(valid[12]-'0'+1)%10)
	if status, body := f.rest(t, "/v1/products/barcode/"+valid); status != 404 || body["error"] != "product_not_found" {
		t.Errorf("valid unknown barcode: %d %v", status, body)
	}
	if status, body := f.rest(t, "/v1/products/barcode/"+wrong); status != 400 || body["error"] != "invalid_barcode" {
		t.Errorf("bad check digit: %d %v", status, body)
	}
	if status, _ := f.rest(t, "/v1/products/prd_0000000000000000"); status != 404 {
		t.Errorf("unknown product: %d", status)
	}

	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/cigars/"+id, nil)
	res, _ := http.DefaultClient.Do(req)
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("no key: %d", res.StatusCode)
	}
}

func (f *fixture) resolve(t *testing.T, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/v1/cigars/resolve", strings.NewReader(body))
	req.Header.Set("x-service-key", f.key)
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func (f *fixture) testRESTResolve(t *testing.T) {
	const js = "application/json"
	status, body := f.resolve(t, js, `{"query": "Fuente Hemingway Short Story"}`)
	if status != 200 || body["resolved"] != true || at(body, "match", "name") != "Hemingway Short Story" || len(body["candidates"].([]any)) == 0 {
		t.Fatalf("resolve: %d %v", status, body)
	}
	if _, ok := body["confidence"]; ok {
		t.Fatal("resolve returned a confidence score")
	}
	status, body = f.resolve(t, js, `{"name": "short story", "brand": "fuente", "limit": 2}`)
	if status != 200 || at(body, "candidates", 0, "brand", "name") != "Arturo Fuente" || len(body["candidates"].([]any)) > 2 {
		t.Fatalf("resolve by name and brand: %d %v", status, body)
	}
	status, body = f.resolve(t, js, `{"query": "robusto"}`)
	if status != 200 || body["resolved"] != false || body["match"] != nil || len(body["candidates"].([]any)) != 5 {
		t.Fatalf("ambiguous: %d %v", status, body)
	}
	for _, tt := range []struct{ ct, body, code string }{
		{js, `{}`, "invalid_body"},
		{js, `{"query": "x y", "name": "x y"}`, "invalid_body"},
		{js, `{"query": "x"}`, "invalid_query"},
		{js, `{"query": "padron", "limit": 11}`, "invalid_limit"},
		{js, `{"query": "padron", "limit": 0}`, "invalid_limit"},
		{js, `{"query": "padron", "colour": "red"}`, "invalid_body"},
		{js, `not json`, "invalid_body"},
		{"text/plain", `{"query": "padron"}`, "unsupported_media_type"},
	} {
		status, body := f.resolve(t, tt.ct, tt.body)
		if status/100 != 4 || body["error"] != tt.code {
			t.Errorf("%s: %d %v, want %s", tt.body, status, body, tt.code)
		}
	}
}

// testSameData compares what REST and GraphQL say of the same cigars and products,
// field by field.
func (f *fixture) testSameData(t *testing.T) {
	const leaf = `region type shade year label`
	const cigar = `id name origin wrapper { ` + leaf + ` } binder { ` + leaf + ` } filler { ` + leaf + ` } brand { id name }`
	d := f.mustData(t, `{ searchCigars(query: "robusto", first: 30) { edges { node { `+cigar+` } } } }`, nil)
	_, rest := f.rest(t, "/v1/cigars/search?q=robusto&limit=30")
	var gql []any
	for _, e := range at(d, "searchCigars", "edges").([]any) {
		gql = append(gql, at(e, "node"))
	}
	if a, b := toJSON(gql), toJSON(rest["data"]); a != b {
		t.Fatalf("search differs:\nGraphQL %s\nREST    %s", a, b)
	}
	id := at(gql[0], "id").(string)
	d = f.mustData(t, `query($id: ID!) { cigar(id: $id) { `+cigar+` } }`, map[string]any{"id": id})
	if _, rest := f.rest(t, "/v1/cigars/"+id); toJSON(d["cigar"]) != toJSON(rest["data"]) {
		t.Fatalf("cigar differs:\nGraphQL %s\nREST    %s", toJSON(d["cigar"]), toJSON(rest["data"]))
	}
	d = f.mustData(t, `{ products(first: 3) { edges { node { id gtin name kind synthetic contents { quantity cigar { `+cigar+` } } } } } }`, nil)
	for _, e := range at(d, "products", "edges").([]any) {
		p := at(e, "node")
		for _, path := range []string{"/v1/products/" + at(p, "id").(string), "/v1/products/barcode/" + at(p, "gtin").(string)} {
			if _, rest := f.rest(t, path); toJSON(p) != toJSON(rest["data"]) {
				t.Fatalf("%s differs:\nGraphQL %s\nREST    %s", path, toJSON(p), toJSON(rest["data"]))
			}
		}
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
