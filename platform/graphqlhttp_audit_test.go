package platform_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
)

// graphql-http's own server audit (npm graphql-http, pinned in
// tools/graphql-http, installed by `make tools`) against the platform's live
// /graphql over real HTTP, every request with a developer key: any audit that
// warns or fails fails the test, by its id and name.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	dir := os.Getenv("VITOLA_GRAPHQL_HTTP")
	if dir == "" {
		dir, _ = filepath.Abs("../.cache/tools/graphql-http")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-http", "package.json")); err != nil {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("graphql-http not installed in %s: run `make tools`", dir)
		}
		t.Skipf("missing graphql-http: not installed in %s; `make test` installs it", dir)
	}
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	cmd := exec.Command("node", "../tools/graphql-http/audit.mjs")
	cmd.Env = append(os.Environ(), "VITOLA_AUDIT_URL="+f.srv.URL+"/graphql", "VITOLA_AUDIT_KEY="+f.key, "VITOLA_GRAPHQL_HTTP="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the audit did not run: %v\n%s", err, stderr.Bytes())
	}
	var results []struct {
		ID, Name, Status, Reason string
		ResponseStatus           int
		ResponseBody             string
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("the audit's output is not its JSON results: %v\n%s", err, out)
	}
	// graphql-http 1.23.1 has 61 server audits: fewer means it did not run them.
	if len(results) < 50 {
		t.Fatalf("the audit ran %d items, want graphql-http 1.23.1's 61", len(results))
	}
	failed := 0
	for _, r := range results {
		if r.Status != "ok" {
			failed++
			t.Errorf("%s %s %q: %s (answered %d: %.300s)", r.Status, r.ID, r.Name, r.Reason, r.ResponseStatus, r.ResponseBody)
		}
	}
	t.Logf("graphql-http audit: %d items, %d not ok", len(results), failed)
}
