// Package deferred_test runs real clients against the real binary: Apollo
// Client (its deferSpec=20220824 handler) and Relay (relay-runtime with a
// multipart network layer) each send a query with @defer to `vitola serve
// --demo` on loopback and must see the initial payload first, then the
// deferred fields.
package deferred_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// require skips (or, with VITOLA_TEST_REQUIRE_SERVICES=1, fails) without
// node and the example's npm packages, which `make test` installs (make
// defer-example).
func require(t *testing.T) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is missing: run `make defer-example` (make test runs it)", what)
		}
		t.Skipf("missing %s: `make defer-example` installs it", what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".vitola-installed")); err != nil {
		missing("the @defer example's npm packages (examples/defer/node_modules)")
	}
}

// run runs a command in this folder and returns its standard output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	// A bound for a busy machine, not a speed test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// serve builds cmd/vitola, runs `vitola serve --demo` on loopback ports of
// its choosing, and returns its /graphql URL and the demo key.
func serve(t *testing.T) (url, key string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vitola")
	run(t, "go", "build", "-o", bin, "../../cmd/vitola")
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--demo", "--data", data, "--addr", "127.0.0.1:0", "--payments-addr", "127.0.0.1:0", "--log-format", "json")
	// The embedded stores only: no database or Redis from the environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VITOLA_") && !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "REDIS_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	// The API's address is in the "listening" line of its JSON log.
	addr := make(chan string, 1)
	var logged bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			mu.Lock()
			logged.Write(append(sc.Bytes(), '\n'))
			mu.Unlock()
			var e struct{ Message, Component, Addr string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Message == "listening" && e.Component == "api" {
				addr <- e.Addr
			}
		}
		io.Copy(io.Discard, logs)
	}()
	select {
	case a := <-addr:
		url = a + "/graphql"
	case <-time.After(2 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("vitola serve did not listen within 2 minutes:\n%s", logged.String())
	}
	// The demo key is written before the API listens.
	raw, err := os.ReadFile(filepath.Join(data, "demo-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return url, strings.TrimSpace(string(raw))
}

func TestClientsReceiveDeferredParts(t *testing.T) {
	require(t)
	url, key := serve(t)

	t.Run("Apollo Client", func(t *testing.T) {
		var results []struct {
			DataState string `json:"dataState"`
			Error     string `json:"error"`
			Data      *struct {
				Brands struct {
					Edges []struct {
						Node map[string]any `json:"node"`
					} `json:"edges"`
				} `json:"brands"`
			} `json:"data"`
		}
		out := run(t, "node", "apollo.mjs", url, key)
		if err := json.Unmarshal([]byte(out), &results); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// Apollo Client reports the request started (no data), the initial
		// payload (streaming: ids, no deferred field), then the merged result.
		var streaming, complete int
		for _, r := range results {
			if r.Error != "" {
				t.Fatalf("Apollo Client reported an error: %s", out)
			}
			switch r.DataState {
			case "streaming":
				streaming++
				if complete > 0 || r.Data == nil || len(r.Data.Brands.Edges) != 2 {
					t.Fatalf("a streaming result that is not the initial payload: %s", out)
				}
				for _, e := range r.Data.Brands.Edges {
					if e.Node["id"] == nil || e.Node["name"] != nil || e.Node["events"] != nil {
						t.Fatalf("the initial payload holds deferred fields, or no id: %s", out)
					}
				}
			case "complete":
				complete++
				if r.Data == nil || len(r.Data.Brands.Edges) != 2 {
					t.Fatalf("complete result: %s", out)
				}
				for _, e := range r.Data.Brands.Edges {
					if name, _ := e.Node["name"].(string); name == "" || e.Node["events"] == nil {
						t.Fatalf("the deferred fields are missing from the complete result: %s", out)
					}
				}
			}
		}
		if streaming != 1 || complete != 1 {
			t.Fatalf("want one streaming result (the initial payload), then one complete: %s", out)
		}
	})

	t.Run("Relay", func(t *testing.T) {
		// relay-compiler compiles the query (its @defer label becomes
		// DeferBrandsQuery$defer$feeds) against the schema the binary
		// introspects.
		run(t, "node", "scripts/schema.mjs", url, key)
		if err := os.RemoveAll(filepath.Join("src", "__generated__")); err != nil {
			t.Fatal(err)
		}
		run(t, filepath.Join("node_modules", ".bin", "relay-compiler"))
		var steps [][]struct {
			ID     string  `json:"id"`
			Name   *string `json:"name"`
			Events *int    `json:"events"`
		}
		out := run(t, "node", "relay.mjs", url, key)
		if err := json.Unmarshal([]byte(out), &steps); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// The store after the initial payload: two brands, ids only; after
		// the deferred part: every name and events connection.
		if len(steps) != 2 || len(steps[0]) != 2 || len(steps[1]) != 2 {
			t.Fatalf("want the store after two payloads, two brands each: %s", out)
		}
		for i := range 2 {
			first, last := steps[0][i], steps[1][i]
			if first.ID == "" || first.Name != nil || first.Events != nil || last.ID != first.ID || last.Name == nil || *last.Name == "" || last.Events == nil {
				t.Fatalf("brand %d: initial %+v, then %+v: %s", i, first, last, out)
			}
		}
	})
}
