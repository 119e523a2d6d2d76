// Package relay_test compiles the Relay example app against the schema the
// running server introspects: relay-compiler refuses a connection that breaks
// the Relay cursor connections specification, a @refetchable fragment on a type
// that is not a Node, or a field the schema lacks.
package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// require skips (or, with VITOLA_TEST_REQUIRE_SERVICES=1, fails) without the
// example's npm packages, which `make test` installs (make relay-example).
func require(t *testing.T) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is missing: run `make relay-example` (make test runs it)", what)
		}
		t.Skipf("missing %s: `make relay-example` installs it", what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".vitola-installed")); err != nil {
		missing("the Relay example's npm packages (examples/relay/node_modules)")
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	// A bound for a busy machine, not a speed test: relay-compiler and tsc
	// take seconds each when it is quiet.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestRelayAppCompilesAgainstTheLiveSchema(t *testing.T) {
	require(t)
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, InternalKey: []byte("relay-example-internal-key-0123456789"), Demo: true,
		Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p.API)
	t.Cleanup(srv.Close)
	_, key, err := p.Keys.CreateKey(context.Background(), "relay example", nil)
	if err != nil {
		t.Fatal(err)
	}

	// The SDL of the server's introspection, as a frontend developer gets it.
	run(t, "node", "scripts/schema.mjs", srv.URL+"/graphql", key, "schema.graphql")
	if err := os.RemoveAll(filepath.Join("src", "__generated__")); err != nil {
		t.Fatal(err)
	}
	// Beside the app, a pagination fragment for every connection and a refetch
	// fragment for every Node type of that schema.
	cov := run(t, "node", "scripts/coverage.mjs", "schema.graphql", filepath.Join("src", "Coverage.ts"))
	var conns, nodes int
	if _, err := fmt.Sscanf(cov[strings.Index(cov, ": ")+2:], "%d connections, %d Node types", &conns, &nodes); err != nil || conns < 12 || nodes < 11 {
		t.Fatalf("coverage: %q (%v): want every connection (12 today) and Node type (11, PublicSession included)", cov, err)
	}
	t.Log(run(t, filepath.Join("node_modules", ".bin", "relay-compiler")))
	run(t, filepath.Join("node_modules", ".bin", "tsc"), "--noEmit", "-p", ".")

	// The pagination and refetch queries relay-compiler wrote run against the
	// server as Relay sends them.
	gen := func(name string) string {
		b, err := os.ReadFile(filepath.Join("src", "__generated__", name+".graphql.ts"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`"text": ("(?:[^"\\]|\\.)*")`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no operation text", name)
		}
		text, err := strconv.Unquote(string(m[1]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return text
	}
	post := func(query string, vars map[string]any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-service-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			Data   map[string]any `json:"data"`
			Errors []any          `json:"errors"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 || len(out.Errors) > 0 {
			t.Fatalf("%s: %d %v %v", query, res.StatusCode, out.Errors, err)
		}
		return out.Data
	}
	venue := venuesdemo.VenueID("The Ember Room")
	events := func(d map[string]any) (ids []string, info map[string]any) {
		conn := d["node"].(map[string]any)["events"].(map[string]any)
		for _, e := range conn["edges"].([]any) {
			ids = append(ids, e.(map[string]any)["node"].(map[string]any)["id"].(string))
		}
		return ids, conn["pageInfo"].(map[string]any)
	}
	// loadNext, then loadPrevious from the second page's start, as
	// usePaginationFragment sends them (the other direction's arguments null).
	q := gen("VenueEventsPaginationQuery")
	all, _ := events(post(q, map[string]any{"id": venue, "first": 10}))
	first, info := events(post(q, map[string]any{"id": venue, "first": 1}))
	second, info2 := events(post(q, map[string]any{"id": venue, "first": 1, "after": info["endCursor"]}))
	back, info3 := events(post(q, map[string]any{"id": venue, "first": nil, "last": 1, "before": info2["startCursor"]}))
	if len(all) < 2 || first[0] != all[0] || second[0] != all[1] || back[0] != all[0] || info3["hasPreviousPage"] != false || info3["hasNextPage"] != true {
		t.Fatalf("events through Relay's pagination query: all %v, first %v, second %v, back %v (%v)", all, first, second, back, info3)
	}
	// A Node refetch of a brand, as Brand_cigarList's pagination does.
	d := post(gen("BrandCigarsPaginationQuery"), map[string]any{"id": "brd_" + strings.Repeat("0", 16), "count": 2})
	if d["node"] != nil {
		t.Fatalf("refetch of an unknown brand: %v", d)
	}
}
