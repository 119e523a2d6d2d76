package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	kvredis "github.com/vitolahq/vitola/internal/kv/redis"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

func apqExt(hash string) string {
	return fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":%q}}`, hash)
}

func postBody(query string, vars map[string]any, ext string) string {
	m := map[string]any{}
	if query != "" {
		m["query"] = query
	}
	if vars != nil {
		m["variables"] = vars
	}
	if ext != "" {
		m["extensions"] = json.RawMessage(ext)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// check asserts one answer: its status, and data (code "") or an error code.
func check(t *testing.T, what string, w interface {
	Result() *http.Response
}, status int, code string) {
	t.Helper()
	rec := w.Result()
	var r gqlReply
	if err := json.NewDecoder(rec.Body).Decode(&r); err != nil {
		t.Fatalf("%s: not JSON (%d)", what, rec.StatusCode)
	}
	got := ""
	if len(r.Errors) > 0 {
		got, _ = r.Errors[0].Extensions["code"].(string)
	}
	if rec.StatusCode != status || got != code || (code == "" && r.Data == nil) {
		t.Fatalf("%s: %d %q %v, want %d %q", what, rec.StatusCode, got, r.Errors, status, code)
	}
}

// The Apollo APQ protocol, in process (no Redis): a hash alone is unknown
// (PersistedQueryNotFound, 200 for application/json as Apollo's clients
// expect), the text with its hash registers it, and then the hash alone runs
// it, by POST and by GET; each document's limits are checked once.
func TestAutomaticPersistedQueries(t *testing.T) {
	tr := newTestRouter(t, limits.Config{})
	const q = `query Brands($first: Int) { brands(first: $first) { edges { node { name } } } }`
	hash := access.DocumentHash(q)
	ext := apqExt(hash)
	gql := router.MediaGraphQLResponse

	w := tr.send(http.MethodPost, "/graphql", "", postBody("", nil, ext))
	check(t, "an unknown hash", w, 200, router.CodePersistedQueryNotFound)
	if !strings.Contains(w.Body.String(), `"PersistedQueryNotFound"`) {
		t.Fatalf("the message Apollo's clients match is missing: %s", w.Body)
	}
	check(t, "an unknown hash, graphql-response+json", tr.send(http.MethodPost, "/graphql", gql, postBody("", nil, ext)), 400, router.CodePersistedQueryNotFound)
	check(t, "an unknown hash over GET", tr.send(http.MethodGet, getURL("extensions", ext), "", ""), 200, router.CodePersistedQueryNotFound)

	prepared0, reused0 := tr.rt.DocumentVerdicts()
	check(t, "the text with its hash", tr.send(http.MethodPost, "/graphql", "", postBody(q, map[string]any{"first": 2}, ext)), 200, "")
	for i := range 5 {
		check(t, fmt.Sprintf("the hash alone (%d)", i), tr.send(http.MethodPost, "/graphql", "", postBody("", map[string]any{"first": 2}, ext)), 200, "")
	}
	check(t, "the hash alone over GET", tr.send(http.MethodGet, getURL("extensions", ext, "variables", `{"first":3}`), "", ""), 200, "")
	// The verdict kept is completed with each request's variables.
	check(t, "the hash alone, a page too large", tr.send(http.MethodPost, "/graphql", gql, postBody("", map[string]any{"first": 500}, ext)), 400, limits.CodePageSize)
	prepared, reused := tr.rt.DocumentVerdicts()
	if prepared-prepared0 != 1 || reused-reused0 != 7 {
		t.Fatalf("limits checked %d times and reused %d times for 8 requests of one document, want 1 and 7", prepared-prepared0, reused-reused0)
	}

	check(t, "a text that is not the hash's", tr.send(http.MethodPost, "/graphql", "", postBody("{ __typename }", nil, ext)), 400, router.CodePersistedQueryHashMismatch)
	for _, bad := range []string{
		`{"persistedQuery":{"version":2,"sha256Hash":"` + hash + `"}}`,
		`{"persistedQuery":{"version":1,"sha256Hash":"abc"}}`,
		`{"persistedQuery":{"version":1,"sha256Hash":"` + strings.ToUpper(hash) + `"}}`,
		`{"persistedQuery":"x"}`,
	} {
		check(t, "invalid "+bad, tr.send(http.MethodPost, "/graphql", "", postBody("", nil, bad)), 400, router.CodePersistedQueryInvalid)
	}

	// What the limits refuse is not registered.
	refused := "{ x: brands(first: 500) { edges { cursor } } }"
	rext := apqExt(access.DocumentHash(refused))
	check(t, "a refused text with its hash", tr.send(http.MethodPost, "/graphql", "", postBody(refused, nil, rext)), 200, limits.CodePageSize)
	check(t, "the refused text's hash alone", tr.send(http.MethodPost, "/graphql", "", postBody("", nil, rext)), 200, router.CodePersistedQueryNotFound)

	// A registered mutation's hash over GET is still a 405.
	const m = `mutation { x }`
	mext := apqExt(access.DocumentHash(m))
	if w := tr.send(http.MethodGet, getURL("query", m, "extensions", mext), "", ""); w.Code != 405 || w.Header().Get("Allow") != "POST" {
		t.Fatalf("a mutation with its hash over GET: %d %s", w.Code, w.Body)
	}
}

// Automatic persisted queries live in Redis when the platform has it: one
// router registers, another runs the hash alone.
func TestAutomaticPersistedQueriesSharedThroughRedis(t *testing.T) {
	url := kvtest.RedisURL(t)
	prefix := kvtest.Prefix("apq")
	open := func() *testRouter {
		st, err := kvredis.Open(context.Background(), url, prefix)
		if err != nil {
			t.Fatalf("Redis unreachable: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return newTestRouterWith(t, limits.Config{}, func(c *router.Config) { c.PersistedQueries = st })
	}
	one, two := open(), open()
	q := "query Shared { __typename }"
	ext := apqExt(access.DocumentHash(q))
	check(t, "unknown on the second router", two.send(http.MethodPost, "/graphql", "", postBody("", nil, ext)), 200, router.CodePersistedQueryNotFound)
	check(t, "registered on the first", one.send(http.MethodPost, "/graphql", "", postBody(q, nil, ext)), 200, "")
	check(t, "the hash alone on the second", two.send(http.MethodPost, "/graphql", "", postBody("", nil, ext)), 200, "")
}

// Trusted documents, registered from a manifest, run by documentId (the
// manifest's ID, or sha256:HASH) or by their hash; a key set to run only
// trusted documents runs nothing else.
func TestTrustedDocuments(t *testing.T) {
	if err := openDemo(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys, st, err := platform.OpenAccess(ctx, sqldb.Config{DataDir: demo.dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	raw, err := os.ReadFile(filepath.Join("testdata", "manifests", "apollo.json"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := router.ParseManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddDocuments(ctx, docs); err != nil {
		t.Fatal(err)
	}
	brands := docs[0] // Brands: the manifest's first in ID order
	if brands.Name != "Brands" {
		t.Fatalf("documents %+v", docs)
	}
	tr := newTestRouterWith(t, limits.Config{}, func(c *router.Config) { c.Documents = st })
	gql := router.MediaGraphQLResponse
	byID := func(id string) string { return fmt.Sprintf(`{"documentId":%q,"variables":{"first":2}}`, id) }

	check(t, "by documentId", tr.send(http.MethodPost, "/graphql", "", byID(brands.ID)), 200, "")
	check(t, "by sha256:HASH", tr.send(http.MethodPost, "/graphql", "", byID("sha256:"+brands.SHA256)), 200, "")
	check(t, "by documentId over GET", tr.send(http.MethodGet, getURL("documentId", brands.ID, "variables", `{"first":1}`), "", ""), 200, "")
	check(t, "by its hash (APQ)", tr.send(http.MethodPost, "/graphql", "", postBody("", map[string]any{"first": 2}, apqExt(brands.SHA256))), 200, "")
	check(t, "an unknown documentId", tr.send(http.MethodPost, "/graphql", "", byID("nope")), 200, router.CodePersistedDocumentNotFound)
	check(t, "an unknown documentId, graphql-response+json", tr.send(http.MethodPost, "/graphql", gql, byID("nope")), 400, router.CodePersistedDocumentNotFound)
	check(t, "documentId and query", tr.send(http.MethodPost, "/graphql", "", `{"documentId":"`+brands.ID+`","query":"{ __typename }"}`), 400, router.CodeBadRequest)

	// A key that runs only trusted documents.
	k, plain, err := demo.p.Keys.CreateKey(ctx, "trusted only", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.SetTrustedDocumentsOnly(ctx, k.ID, true); err != nil {
		t.Fatal(err)
	}
	only := &testRouter{rt: tr.rt, key: plain}
	other := "query Other { __typename }"
	check(t, "trusted only: another text", only.send(http.MethodPost, "/graphql", "", postBody(other, nil, "")), 403, router.CodeTrustedDocumentsOnly)
	check(t, "trusted only: a deferred text, multipart accepted", only.send(http.MethodPost, "/graphql", acceptIncremental,
		postBody(`{ brands(first: 1) { edges { node { id ... @defer { name } } } } }`, nil, "")), 403, router.CodeTrustedDocumentsOnly)
	check(t, "trusted only: another text over GET", only.send(http.MethodGet, getURL("query", other), "", ""), 403, router.CodeTrustedDocumentsOnly)
	check(t, "trusted only: registering another text", only.send(http.MethodPost, "/graphql", "", postBody(other, nil, apqExt(access.DocumentHash(other)))), 403, router.CodeTrustedDocumentsOnly)
	// Registered as an APQ by an ordinary key, it is still not trusted.
	check(t, "an ordinary key registers it", tr.send(http.MethodPost, "/graphql", "", postBody(other, nil, apqExt(access.DocumentHash(other)))), 200, "")
	check(t, "trusted only: its hash", only.send(http.MethodPost, "/graphql", "", postBody("", nil, apqExt(access.DocumentHash(other)))), 403, router.CodeTrustedDocumentsOnly)
	check(t, "trusted only: by documentId", only.send(http.MethodPost, "/graphql", "", byID(brands.ID)), 200, "")
	check(t, "trusted only: by hash", only.send(http.MethodPost, "/graphql", "", postBody("", map[string]any{"first": 1}, apqExt(brands.SHA256))), 200, "")
	check(t, "trusted only: the trusted text itself", only.send(http.MethodPost, "/graphql", "", postBody(brands.Body, map[string]any{"first": 1}, "")), 200, "")

	// Turned off, the key runs any operation again (after the key cache's TTL).
	if _, err := keys.SetTrustedDocumentsOnly(ctx, k.ID, false); err != nil {
		t.Fatal(err)
	}
	fresh := &testRouter{rt: tr.rt, key: plain}
	deadline := 0
	for {
		w := fresh.send(http.MethodPost, "/graphql", "", postBody(other, nil, ""))
		if w.Code == 200 {
			break
		}
		if deadline++; deadline > 40 {
			t.Fatalf("the setting turned off still refuses: %d %s", w.Code, w.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ParseManifest reads Relay's, GraphQL Code Generator's and Apollo's
// manifests (testdata/manifests/NAME.json) into the documents of
// NAME.golden.json (VITOLA_UPDATE=1 rewrites them), and refuses what is not
// one of them.
func TestParseManifest(t *testing.T) {
	for _, name := range []string{"relay", "codegen", "apollo"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "manifests", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := router.ParseManifest(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if d.SHA256 != access.DocumentHash(d.Body) {
					t.Fatalf("%s: hash %s", d.ID, d.SHA256)
				}
			}
			got, _ := json.MarshalIndent(docs, "", "  ")
			got = append(got, '\n')
			golden := filepath.Join("testdata", "manifests", name+".golden.json")
			if os.Getenv("VITOLA_UPDATE") == "1" {
				os.WriteFile(golden, got, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	for _, bad := range []string{
		``, `[]`, `"x"`, `{}`,
		`{"a": 1}`,
		`{"a": ""}`,
		`{"format": "something-else", "version": 1, "operations": []}`,
		`{"format": "apollo-persisted-query-manifest", "version": 2, "operations": [{"id": "a", "body": "{ x }"}]}`,
		`{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id": "", "body": "{ x }"}]}`,
		`{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id": "a", "body": "{ x }"}, {"id": "a", "body": "{ y }"}]}`,
	} {
		if docs, err := router.ParseManifest([]byte(bad)); err == nil {
			t.Errorf("%s: parsed as %+v", bad, docs)
		}
	}
}
