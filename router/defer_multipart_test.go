package router_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/kv/memory"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
	"github.com/vitolahq/vitola/schema"
)

// acceptIncremental is what Apollo Client and Relay's multipart network
// layers send.
const acceptIncremental = "multipart/mixed;deferSpec=20220824,application/json"

// updateGoldens rewrites testdata/defer instead of comparing with it.
var updateGoldens = os.Getenv("VITOLA_UPDATE_GOLDENS") == "1"

// A client that takes multipart/mixed gets a deferred operation as parts, in
// the deferSpec=20220824 format: the initial payload without the deferred
// fields, then each deferred fragment at its path (one item per list element),
// the last part with hasNext false. Every part is compared with a golden, and
// the parts merged together answer exactly what the inline response answers.
func TestDeferMultipart(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	for _, tt := range []struct {
		name, method, query string
		vars                map[string]any
	}{
		{"list", http.MethodPost, `{ brands(first: 3) { edges { node { id ... @defer(label: "more") { name country } } } } }`, nil},
		{"list-get", http.MethodGet, `{ brands(first: 2) { edges { node { id ... @defer { name } } } } }`, nil},
		{"nested", http.MethodPost, `{ brands(first: 1) { edges { node { ... @defer(label: "outer") { id ... @defer(label: "inner") { name } } } } } }`, nil},
		{"root", http.MethodPost, `{ ... @defer(label: "all") { brands(first: 1) { edges { node { id name } } } } }`, nil},
		{"across-subgraphs", http.MethodPost, `{ brands(first: 2) { edges { node { id name ... @defer(label: "feeds") { events(first: 2) { edges { node { id name venue { name } } } } sessions(limit: 2) { count } } } } } }`, nil},
		{"interface", http.MethodPost, `{ node(id: "brd_1m1yv0dwrfkp4sak") { id ... on Brand @defer { name } } }`, nil},
		{"fragment-spread", http.MethodPost, `query Brands { brands(first: 1) { edges { node { id ...N @defer(label: "n") } } } } fragment N on Brand { name }`, nil},
		{"if-variable", http.MethodPost, `query($d: Boolean!) { brands(first: 1) { edges { node { id ... @defer(if: $d) { name } } } } }`, map[string]any{"d": true}},
		{"nested-lists", http.MethodPost, `{ brands(first: 2) { edges { node { id ... @defer { cigars(first: 2) { edges { node { id ... @defer(label: "deep") { name } } } } } } } } }`, nil},
		{"nested-across-subgraphs", http.MethodPost, `{ searchCigars(query: "padron", first: 2) { edges { node { id ... @defer { name brand { name ... @defer { country events(first: 1) { edges { node { name } } } } } } } } } }`, nil},
		{"overlap", http.MethodPost, `{ brands(first: 2) { edges { node { id name ... @defer { name country } } } } }`, nil},
		{"aliases", http.MethodPost, `{ brands(first: 2) { edges { node { a: id ... @defer { b: name } } } } }`, nil},
		{"null-anchor", http.MethodPost, `{ cigar(id: "cig_nope") { id ... @defer { name } } }`, nil},
		{"not-a-list", http.MethodPost, `{ brands(first: 1) { pageInfo { hasNextPage ... @defer { endCursor } } edges { node { id } } } }`, nil},
		{"introspection", http.MethodPost, `{ __schema { queryType { name ... @defer { fields { name } } } } }`, nil},
		{"two-siblings", http.MethodPost, `{ brands(first: 1) { edges { node { id ... @defer(label: "a") { name } ... @defer(label: "b") { country } } } } }`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"query": tt.query}
			if tt.vars != nil {
				body["variables"] = tt.vars
			}
			res := tr.accepting(t, srv, tt.method, body, acceptIncremental)
			defer res.Body.Close()
			if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != `multipart/mixed; boundary="-"; deferSpec=20220824` {
				raw, _ := io.ReadAll(res.Body)
				t.Fatalf("%d %s: %s", res.StatusCode, ct, raw)
			}
			parts := readParts(t, res.Body)
			checkStream(t, parts)
			golden(t, filepath.Join("testdata", "defer", tt.name+".json"), parts)
			// The merged parts are the inline answer.
			sameJSON(t, mergeParts(t, parts), deferData(t, tr, srv, tt.method, tt.query, tt.vars))
		})
	}
}

// Without multipart/mixed in Accept, or with @defer disabled, or in another
// format than the one served, the answer is one ordinary response; so is an
// operation without @defer, even when the client takes multipart/mixed alone.
func TestDeferMultipartOnlyWhenAsked(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	deferred := `{ brands(first: 1) { edges { node { id ... @defer { name } } } } }`
	for _, tt := range []struct{ accept, query string }{
		{"application/json", deferred},
		{"application/graphql-response+json, */*", deferred},
		{"multipart/mixed;deferSpec=20990101, application/json", deferred},
		{"multipart/mixed;deferSpec=20220824;q=0, application/json", deferred},
		{acceptIncremental, `{ brands(first: 1) { edges { node { id ... @defer(if: false) { name } } } } }`},
		{acceptIncremental, `{ brands(first: 1) { edges { node { id name } } } }`},
		{"multipart/mixed", `{ brands(first: 1) { edges { node { id name } } } }`}, // no 406: application/json
	} {
		res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": tt.query}, tt.accept)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var r struct {
			Data    map[string]any `json:"data"`
			HasNext *bool          `json:"hasNext"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || res.StatusCode != http.StatusOK || strings.HasPrefix(res.Header.Get("Content-Type"), "multipart/") ||
			r.HasNext != nil || !strings.Contains(string(raw), `"name":"Padrón"`) {
			t.Errorf("Accept %s, %s: %d %s %s", tt.accept, tt.query, res.StatusCode, res.Header.Get("Content-Type"), raw)
		}
	}
}

// Accept values that take parts: Apollo Client's and Relay's, and
// multipart/mixed written otherwise (no deferSpec, case, quotes, quality).
func TestDeferMultipartAccept(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	srv := tr.overHTTP(t)
	for _, accept := range []string{
		"multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9",
		"multipart/mixed;deferSpec=20220824, application/json",
		"multipart/mixed",
		`Multipart/Mixed; DeferSpec="20220824"`,
		"application/json;q=0.9, multipart/mixed;q=0.5;deferSpec=20220824",
	} {
		res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id ... @defer { name } } } } }`}, accept)
		parts := readParts(t, res.Body)
		res.Body.Close()
		if len(parts) != 2 {
			t.Errorf("Accept %s: %d parts", accept, len(parts))
		}
	}
}

// Limits apply to the whole operation, deferred fragments included, before
// anything runs: a refused operation gets the ordinary error response, never
// a stream.
func TestDeferMultipartRefusals(t *testing.T) {
	tr := newTestRouter(t, limits.Config{MaxDepth: 7})
	srv := tr.overHTTP(t)
	for _, tt := range []struct{ query, code string }{
		{`{ brands(first: 100) { edges { node { id ... @defer { cigars(first: 100) { edges { node { name } } } } } } } }`, limits.CodeCost},
		{`{ brands(first: 1) { edges { node { id ... @defer { cigars(first: 1) { edges { node { brand { name } } } } } } } } }`, limits.CodeDepth},
		{`{ brands(first: 1) { edges { node { ... @defer(label: "a") { id } ... @defer(label: "a") { name } } } } }`, limits.CodeValidationFailed},
		{`{ brands(first: 1) { edges { node { id ... @defer { nope } } } } }`, limits.CodeValidationFailed},
	} {
		res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": tt.query}, "multipart/mixed;deferSpec=20220824, application/graphql-response+json")
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var r gqlReply
		if err := json.Unmarshal(raw, &r); err != nil || res.StatusCode != http.StatusBadRequest || len(r.Errors) == 0 ||
			r.Errors[0].Extensions["code"] != tt.code || !strings.HasPrefix(res.Header.Get("Content-Type"), router.MediaGraphQLResponse) {
			t.Errorf("%s: %d %s %s, want 400 %s", tt.query, res.StatusCode, res.Header.Get("Content-Type"), raw, tt.code)
		}
	}
}

// The cost quota is spent for the whole operation before anything runs: an
// operation whose initial payload fits the key's quota but whose deferred
// fragments do not is refused with the ordinary 429, not a stream.
func TestDeferMultipartCostQuota(t *testing.T) {
	const (
		initial  = `{ brands(first: 20) { edges { node { id } } } }`
		deferred = `{ brands(first: 20) { edges { node { id ... @defer { cigars(first: 20) { edges { node { name } } } } } } } }`
	)
	composed, err := router.LoadComposed(schema.RouterConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	an, err := limits.New(composed.ClientSchema, composed.SubgraphSDLs, limits.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cost := func(q string) int {
		m, err := an.Check(q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return m.Cost
	}
	small, whole := cost(initial), cost(deferred)
	if whole <= 2*small {
		t.Fatalf("costs %d and %d: the deferred fragment must cost more than the rest", small, whole)
	}
	quota := int64(small+whole) / 2
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Quotas = access.NewQuotas(memory.New(time.Now), access.QuotaConfig{Default: access.Limits{CostPerMinute: quota}}, zerolog.Nop())
	})
	srv := tr.overHTTP(t)
	res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": deferred}, acceptIncremental)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var r gqlReply
	if err := json.Unmarshal(raw, &r); err != nil || res.StatusCode != http.StatusTooManyRequests || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != access.GraphQLCode {
		t.Fatalf("cost %d over a quota of %d: %d %s %s", whole, quota, res.StatusCode, res.Header.Get("Content-Type"), raw)
	}
	// The initial payload alone fits (what is left of the quota is untouched).
	res = tr.accepting(t, srv, http.MethodPost, map[string]any{"query": initial}, acceptIncremental)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("cost %d under a quota of %d: %d", small, quota, res.StatusCode)
	}
}

// A deferred fragment whose subgraph answers errors gets them in its own
// part's errors, with a code; the initial payload is untouched.
func TestDeferMultipartErrorInPart(t *testing.T) {
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Client = interceptDeferred(c.Client, func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
			return jsonResponse(r, `{"data":null,"errors":[{"message":"the events store is down","extensions":{"code":"UNAVAILABLE"}}]}`), nil
		})
	})
	srv := tr.overHTTP(t)
	res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id name ... @defer(label: "feeds") { events(first: 2) { edges { node { id } } } } } } } }`}, acceptIncremental)
	defer res.Body.Close()
	parts := readParts(t, res.Body)
	checkStream(t, parts)
	if strings.Contains(string(parts[0]), "errors") {
		t.Fatalf("initial payload with errors: %s", parts[0])
	}
	errs := partErrors(t, parts[1:])
	if len(errs) == 0 {
		t.Fatalf("no errors in the deferred parts: %s", bytes.Join(parts, []byte("\n")))
	}
	for _, e := range errs {
		if code, _ := e.Extensions["code"].(string); code == "" || strings.Contains(e.Message, ".internal") {
			t.Fatalf("error without a code, or naming a host: %+v", e)
		}
	}
}

// When the initial payload's own fetch fails, nothing is left to defer: one
// part with the subgraph's errors and hasNext false.
func TestDeferMultipartInitialErrors(t *testing.T) {
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Client = intercept(c.Client, func(body []byte) bool { return bytes.Contains(body, []byte("brands")) },
			func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
				return jsonResponse(r, `{"data":null,"errors":[{"message":"the catalog is down","extensions":{"code":"UNAVAILABLE"}}]}`), nil
			})
	})
	srv := tr.overHTTP(t)
	res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id ... @defer { name } } } } }`}, acceptIncremental)
	defer res.Body.Close()
	parts := readParts(t, res.Body)
	checkStream(t, parts)
	sameJSON(t, string(parts[0]), `{"data":null,"errors":[{"message":"the catalog is down","extensions":{"code":"UNAVAILABLE"}}],"hasNext":false}`)
}

// The operation's deadline stops a deferred fetch: the stream, committed by
// its initial payload, ends with a part whose errors say TIMEOUT.
func TestDeferMultipartTimeout(t *testing.T) {
	var stopped atomic.Bool
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Timeout = time.Second
		c.Client = interceptDeferred(c.Client, func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
			<-r.Context().Done()
			stopped.Store(true)
			return nil, r.Context().Err()
		})
	})
	srv := tr.overHTTP(t)
	res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id ... @defer(label: "feeds") { events(first: 2) { edges { node { id } } } } } } } }`}, acceptIncremental)
	defer res.Body.Close()
	parts := readParts(t, res.Body)
	checkStream(t, parts)
	errs := partErrors(t, parts[1:])
	if len(errs) == 0 || errs[len(errs)-1].Extensions["code"] != router.CodeTimeout || !stopped.Load() {
		t.Fatalf("want a last part with TIMEOUT, the fetch stopped (%v): %s", stopped.Load(), bytes.Join(parts, []byte("\n")))
	}
}

// Each part is flushed as it is ready: the client reads the initial payload
// while the deferred fragment's fetch waits, and the deferred part once the
// fetch goes on.
func TestDeferMultipartFlushesEachPart(t *testing.T) {
	release := make(chan struct{})
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Client = interceptDeferred(c.Client, func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
			select {
			case <-release:
				return next.RoundTrip(r)
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		})
	})
	srv := tr.overHTTP(t)
	res := tr.accepting(t, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id ... @defer(label: "feeds") { events(first: 1) { edges { node { name } } } } } } } }`}, acceptIncremental)
	defer res.Body.Close()
	pr := newPartReader(res.Body)
	first, ok := pr.next(t) // would block until the deadline if not flushed
	if !ok || !strings.Contains(string(first), `"hasNext":true`) || strings.Contains(string(first), "events") {
		t.Fatalf("initial payload: %s", first)
	}
	close(release)
	// Data, not the deadline's errors: the initial payload came while the
	// fetch waited.
	second, ok := pr.next(t)
	if !ok || !strings.Contains(string(second), `"label":"feeds"`) || !strings.Contains(string(second), `"events"`) ||
		strings.Contains(string(second), "errors") || !strings.Contains(string(second), `"hasNext":false`) {
		t.Fatalf("deferred part: %s", second)
	}
	if _, more := pr.next(t); more {
		t.Fatal("a part after the last")
	}
}

// The initial payload is flushed before a deferred fragment is ready, and a
// client that leaves stops the deferred fetch.
func TestDeferMultipartDisconnect(t *testing.T) {
	stopped := make(chan struct{})
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) {
		c.Client = interceptDeferred(c.Client, func(r *http.Request, _ http.RoundTripper) (*http.Response, error) {
			<-r.Context().Done()
			close(stopped)
			return nil, r.Context().Err()
		})
	})
	srv := tr.overHTTP(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := tr.acceptingCtx(t, ctx, srv, http.MethodPost, map[string]any{"query": `{ brands(first: 1) { edges { node { id ... @defer { events(first: 2) { edges { node { id } } } } } } } }`}, acceptIncremental)
	defer res.Body.Close()
	first, ok := newPartReader(res.Body).next(t)
	if !ok || !strings.Contains(string(first), `"hasNext":true`) {
		t.Fatalf("initial payload: %s", first)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the deferred fetch went on after the client left")
	}
}

// accepting makes one request with an Accept of the test's and the test key
// (a GET's URL parameters are body's members, variables and extensions
// JSON-encoded), and returns the response for the test to read.
func (tr *testRouter) accepting(tb testing.TB, srv *httptest.Server, method string, body map[string]any, accept string) *http.Response {
	tb.Helper()
	return tr.acceptingCtx(tb, context.Background(), srv, method, body, accept)
}

func (tr *testRouter) acceptingCtx(tb testing.TB, ctx context.Context, srv *httptest.Server, method string, body map[string]any, accept string) *http.Response {
	tb.Helper()
	var req *http.Request
	var err error
	if method == http.MethodGet {
		q := url.Values{}
		for k, v := range body {
			if s, ok := v.(string); ok {
				q.Set(k, s)
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				tb.Fatal(err)
			}
			q.Set(k, string(raw))
		}
		req, err = http.NewRequestWithContext(ctx, method, srv.URL+"/graphql?"+q.Encode(), nil)
	} else {
		raw, merr := json.Marshal(body)
		if merr != nil {
			tb.Fatal(merr)
		}
		req, err = http.NewRequestWithContext(ctx, method, srv.URL+"/graphql", bytes.NewReader(raw))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set(access.Header, tr.key)
	res, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// readParts reads a whole multipart/mixed response (boundary "-") and
// returns each part's JSON body, checking the framing byte for byte.
func readParts(t *testing.T, body io.Reader) [][]byte {
	t.Helper()
	pr := newPartReader(body)
	var parts [][]byte
	for {
		p, ok := pr.next(t)
		if !ok {
			break
		}
		parts = append(parts, p)
	}
	if rest, _ := io.ReadAll(pr.br); len(rest) > 0 {
		t.Fatalf("bytes after the closing delimiter: %q", rest)
	}
	return parts
}

// partReader reads parts as they arrive, each with the delimiter after it:
// CRLF "---" CRLF opens the response, then each part is its header, a blank
// line, its JSON body, and CRLF "---" CRLF (CRLF "-----" CRLF after the
// last). A part whose delimiter did not come with it blocks next, as it
// blocks a client.
type partReader struct {
	br            *bufio.Reader
	started, done bool
}

func newPartReader(r io.Reader) *partReader { return &partReader{br: bufio.NewReader(r)} }

// next returns the next part's body, false after the last.
func (pr *partReader) next(t *testing.T) ([]byte, bool) {
	t.Helper()
	if pr.done {
		return nil, false
	}
	line := func() string {
		s, err := pr.br.ReadString('\n')
		if err != nil || !strings.HasSuffix(s, "\r\n") {
			t.Fatalf("multipart: %q, %v", s, err)
		}
		return strings.TrimSuffix(s, "\r\n")
	}
	if !pr.started {
		pr.started = true
		if l, d := line(), line(); l != "" || d != "---" {
			t.Fatalf("multipart: %q %q, want the opening delimiter", l, d)
		}
	}
	if h := line(); !strings.EqualFold(h, "Content-Type: application/json; charset=utf-8") {
		t.Fatalf("part header %q", h)
	}
	if l := line(); l != "" {
		t.Fatalf("part header %q", l)
	}
	// The body runs to the delimiter's CRLF: encoded JSON holds none.
	body := []byte(line())
	if !json.Valid(body) {
		t.Fatalf("part body %q", body)
	}
	switch d := line(); d {
	case "---":
	case "-----":
		pr.done = true
	default:
		t.Fatalf("multipart: %q after a part, want a delimiter", d)
	}
	return body, true
}

// checkStream checks the parts' shape: an initial payload {data, hasNext},
// then parts of incremental items, every hasNext true but the last's (the
// initial payload's own when a fragment's object is null: nothing is left).
func checkStream(t *testing.T, parts [][]byte) {
	t.Helper()
	if len(parts) == 0 {
		t.Fatal("no part, want at least an initial payload")
	}
	for i, p := range parts {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(i < len(parts)-1)
		if string(m["hasNext"]) != want {
			t.Fatalf("part %d: hasNext %s, want %s: %s", i, m["hasNext"], want, p)
		}
		for k := range m {
			allowed := map[bool][]string{true: {"data", "errors", "extensions", "hasNext"}, false: {"incremental", "hasNext", "extensions"}}[i == 0]
			if !strings.Contains(" "+strings.Join(allowed, " ")+" ", " "+k+" ") {
				t.Fatalf("part %d has %q: %s", i, k, p)
			}
		}
		if i == 0 && m["data"] == nil {
			t.Fatalf("initial payload without data: %s", p)
		}
	}
}

type item struct {
	Data   map[string]any `json:"data"`
	Path   []any          `json:"path"`
	Label  string         `json:"label"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// mergeParts applies every incremental item to the initial payload's data, as
// a client does, and returns the result.
func mergeParts(t *testing.T, parts [][]byte) string {
	t.Helper()
	var initial struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(parts[0], &initial); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts[1:] {
		var sub struct{ Incremental []item }
		if err := json.Unmarshal(p, &sub); err != nil {
			t.Fatal(err)
		}
		for _, it := range sub.Incremental {
			var at any = initial.Data
			for _, seg := range it.Path {
				switch s := seg.(type) {
				case string:
					at = at.(map[string]any)[s]
				case float64:
					at = at.([]any)[int(s)]
				}
			}
			obj, ok := at.(map[string]any)
			if !ok {
				t.Fatalf("path %v is not an object in %v", it.Path, initial.Data)
			}
			deepMerge(obj, it.Data)
		}
	}
	out, _ := json.Marshal(initial.Data)
	return string(out)
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		if d, ok := dst[k].(map[string]any); ok {
			if s, ok := v.(map[string]any); ok {
				deepMerge(d, s)
				continue
			}
		}
		dst[k] = v
	}
}

// partErrors returns the errors of every incremental item of parts.
func partErrors(t *testing.T, parts [][]byte) []struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
} {
	t.Helper()
	var out []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	}
	for _, p := range parts {
		var sub struct{ Incremental []item }
		if err := json.Unmarshal(p, &sub); err != nil {
			t.Fatal(err)
		}
		for _, it := range sub.Incremental {
			out = append(out, it.Errors...)
		}
	}
	return out
}

// golden compares parts with a file holding one part per line, or writes it
// with VITOLA_UPDATE_GOLDENS=1.
func golden(t *testing.T, path string, parts [][]byte) {
	t.Helper()
	got := append(bytes.Join(parts, []byte("\n")), '\n')
	if updateGoldens {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (VITOLA_UPDATE_GOLDENS=1 writes it)", err)
	}
	wantParts := bytes.Split(bytes.TrimSuffix(want, []byte("\n")), []byte("\n"))
	if len(wantParts) != len(parts) {
		t.Fatalf("%d parts, want %d:\n%s\nwant\n%s", len(parts), len(wantParts), got, want)
	}
	sameJSON(t, string(parts[0]), string(wantParts[0]))
	// Sibling fragments run at once and come in either order: later parts
	// match as a set, hasNext aside (checkStream checks it).
	used := make([]bool, len(parts))
next:
	for _, w := range wantParts[1:] {
		for i, g := range parts[1:] {
			if !used[i] && reflect.DeepEqual(withoutHasNext(t, g), withoutHasNext(t, w)) {
				used[i] = true
				continue next
			}
		}
		t.Fatalf("no part %s in\n%s", w, got)
	}
}

func withoutHasNext(t *testing.T, part []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(part, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hasNext")
	return m
}

// interceptDeferred wraps a subgraph client: a request for an entity's events
// (the deferred fetch of the tests' queries) goes to fn instead.
func interceptDeferred(c *http.Client, fn func(r *http.Request, next http.RoundTripper) (*http.Response, error)) *http.Client {
	return intercept(c, func(body []byte) bool {
		return bytes.Contains(body, []byte("_entities")) && bytes.Contains(body, []byte("events"))
	}, fn)
}

// intercept wraps a subgraph client: a request whose body matches goes to fn
// (with the client's own transport as next) instead.
func intercept(c *http.Client, match func(body []byte) bool, fn func(r *http.Request, next http.RoundTripper) (*http.Response, error)) *http.Client {
	base := c.Transport
	out := *c
	out.Transport = roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			raw, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(raw))
			if match(raw) {
				return fn(r, base)
			}
		}
		return base.RoundTrip(r)
	})
	return &out
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func jsonResponse(r *http.Request, body string) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}
}
