package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

// The compositions under testdata/federation/<pattern> are small graphs of our
// own, one for each federation pattern the router must plan: each subgraph's
// SDL, graph.yaml, and router-config.json as the pinned wgc composes it
// (TestFederationCompositionsAreFresh recomposes and compares; set
// VITOLA_UPDATE=1 to rewrite them). Their routing URLs are http://NAME.test/graphql,
// which the test transport hands to fakeSubgraphs in process.

const federationTestKey = "test-key"

// oneKey accepts federationTestKey only.
type oneKey struct{}

func (oneKey) Authenticate(_ context.Context, plain string) (access.Key, error) {
	if plain != federationTestKey {
		return access.Key{}, access.ErrNoKey
	}
	return access.Key{ID: "key_test", Name: "test"}, nil
}

// compositionConfig reads a pattern's composed router config.
func compositionConfig(tb testing.TB, pattern string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "federation", pattern, "router-config.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// compositionSDL reads one subgraph's SDL of a pattern.
func compositionSDL(tb testing.TB, pattern, subgraph string) string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "federation", pattern, subgraph+".graphqls"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(raw)
}

// newFederationRouter is the real router over a pattern's composition, its
// subgraphs answered by hand in process.
func newFederationRouter(tb testing.TB, pattern string, subgraphs map[string]*fakeSubgraph, lim limits.Config) *testRouter {
	tb.Helper()
	composed, err := router.LoadComposed(compositionConfig(tb, pattern), nil)
	if err != nil {
		tb.Fatal(err)
	}
	hosts := map[string]http.Handler{}
	for name, sg := range subgraphs {
		if sg.sdl == "" {
			sg.sdl = compositionSDL(tb, pattern, name)
		}
		hosts[name+".test"] = sg
	}
	for name := range composed.Subgraphs {
		if _, ok := subgraphs[name]; !ok {
			tb.Fatalf("no fake for subgraph %q of %s", name, pattern)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	client := &http.Client{Transport: &inproc.Transport{Handlers: hosts}}
	rt, err := router.New(ctx, router.Config{Composed: composed, Client: client, Keys: oneKey{}, Limits: lim, Tuning: testTuning, Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	return &testRouter{rt: rt, key: federationTestKey}
}

// queryData sends a query that must succeed and returns its data as JSON.
func (tr *testRouter) queryData(tb testing.TB, query string, vars any) string {
	tb.Helper()
	w := tr.serve(queryBody(query, vars))
	r := decodeReply(tb, w)
	if w.Code != http.StatusOK || len(r.Errors) > 0 {
		tb.Fatalf("%s: %d %s", query, w.Code, w.Body.Bytes())
	}
	b, _ := json.Marshal(r.Data)
	return string(b)
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(tb testing.TB, got, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		tb.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("want is not JSON: %s", want)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("got  %s\nwant %s", got, want)
	}
}

// federationPatterns lists the compositions under testdata/federation.
func federationPatterns(tb testing.TB) []string {
	tb.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "federation", "*", "graph.yaml"))
	if err != nil || len(dirs) == 0 {
		tb.Fatalf("no compositions under testdata/federation: %v", err)
	}
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Base(filepath.Dir(d)))
	}
	return out
}

// TestFederationCompositionsAreFresh recomposes every test composition with the
// pinned wgc and compares it with the committed router-config.json.
func TestFederationCompositionsAreFresh(t *testing.T) {
	wgc := os.Getenv("VITOLA_WGC")
	if wgc == "" {
		wgc, _ = filepath.Abs("../.cache/tools/node_modules/.bin/wgc")
	}
	if _, err := os.Stat(wgc); err != nil {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("wgc not installed at %s: run `make tools`", wgc)
		}
		t.Skipf("wgc not installed at %s: `make test` installs it", wgc)
	}
	for _, pattern := range federationPatterns(t) {
		t.Run(pattern, func(t *testing.T) {
			t.Parallel() // wgc takes 2 s a composition, mostly starting node
			dir := filepath.Join("testdata", "federation", pattern)
			out := filepath.Join(t.TempDir(), "router-config.json")
			cmd := exec.Command(wgc, "router", "compose", "-i", "graph.yaml", "-o", out)
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("wgc router compose: %v\n%s", err, b)
			}
			fresh, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			committed := filepath.Join(dir, "router-config.json")
			if os.Getenv("VITOLA_UPDATE") == "1" {
				var indented []byte
				if indented, err = indentJSON(fresh); err == nil {
					err = os.WriteFile(committed, indented, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			old, err := os.ReadFile(committed)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			var want, got any
			json.Unmarshal(fresh, &want)
			json.Unmarshal(old, &got)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s is stale: run `VITOLA_UPDATE=1 go test ./router -run TestFederationCompositionsAreFresh` and commit it", committed)
			}
		})
	}
}

func indentJSON(raw []byte) ([]byte, error) {
	var v json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
