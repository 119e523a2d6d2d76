// Package deferred_test runs real clients against the real binary: Apollo
// Client (its deferSpec=20220824 handler) and Relay (relay-runtime with a
// multipart network layer) each send a query with @defer to `vitola serve
// --demo` on loopback and must see the initial payload first, then the
// deferred fields. A proxy between them holds the deferred part until the
// client has taken the initial payload: a client that did not take it on its
// own would wait forever. (That the server sends each part with the
// delimiter after it, which clients need, router's
// TestDeferMultipartFlushesEachPart checks.)
package deferred_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

// holdAfterInitial is a reverse proxy in front of the binary's /graphql that
// passes a multipart response's bytes up to the end of its first part (the
// initial payload, with the delimiter after it) and holds the rest until the
// client GETs seenURL: a client that waits for more bytes before it takes
// the initial payload never gets its deferred parts (held reports a wait of
// more than the bound instead).
type holdAfterInitial struct {
	url, seenURL string
	seen         chan struct{}
	once         sync.Once
	timedOut     atomic.Bool
}

// holdBound is how long the proxy holds a response for the client's word.
const holdBound = 20 * time.Second

func newHoldAfterInitial(t *testing.T, upstream string) *holdAfterInitial {
	t.Helper()
	target, err := neturl.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	h := &holdAfterInitial{seen: make(chan struct{})}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = target.Path },
		ModifyResponse: func(res *http.Response) error {
			if strings.HasPrefix(res.Header.Get("Content-Type"), "multipart/mixed") {
				res.Body = &heldBody{src: res.Body, r: bufio.NewReader(res.Body), h: h}
			}
			return nil
		},
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", proxy)
	mux.HandleFunc("/seen", func(w http.ResponseWriter, r *http.Request) { h.once.Do(func() { close(h.seen) }) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.url, h.seenURL = srv.URL+"/graphql", srv.URL+"/seen"
	return h
}

// heldBody passes a response line by line up to the end of its first part,
// then waits for the client's word (or the bound) before it passes the rest.
type heldBody struct {
	src     io.ReadCloser
	r       *bufio.Reader
	h       *holdAfterInitial
	pending []byte // read, not passed yet
	delims  int    // delimiter lines passed: the opening one, then the first part's
	waited  bool
	err     error
}

func (b *heldBody) Read(p []byte) (int, error) {
	if len(b.pending) == 0 {
		if b.waited {
			return b.r.Read(p)
		}
		if b.delims == 2 {
			b.waited = true
			select {
			case <-b.h.seen:
			case <-time.After(holdBound):
				b.h.timedOut.Store(true)
			}
			return b.r.Read(p)
		}
		if b.err != nil {
			return 0, b.err
		}
		b.pending, b.err = b.r.ReadBytes('\n')
		if string(b.pending) == "---\r\n" {
			b.delims++
		}
		if len(b.pending) == 0 {
			return 0, b.err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *heldBody) Close() error { return b.src.Close() }

func TestClientsReceiveDeferredParts(t *testing.T) {
	require(t)
	upstream, key := serve(t)
	// Each client talks to the binary through a proxy of its own that holds
	// the deferred part until the client has taken the initial payload.
	through := func(t *testing.T) *holdAfterInitial {
		proxy := newHoldAfterInitial(t, upstream)
		t.Setenv("VITOLA_SEEN_URL", proxy.seenURL)
		return proxy
	}
	held := func(t *testing.T, proxy *holdAfterInitial, out string) {
		t.Helper()
		if proxy.timedOut.Load() {
			t.Fatalf("the client did not take the initial payload before the deferred part came (%s held): %s", holdBound, out)
		}
		select {
		case <-proxy.seen:
		default:
			t.Fatalf("the client never said it had the initial payload: %s", out)
		}
	}

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
		proxy := through(t)
		out := run(t, "node", "apollo.mjs", proxy.url, key)
		held(t, proxy, out)
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
		proxy := through(t)
		run(t, "node", "scripts/schema.mjs", proxy.url, key)
		if err := os.RemoveAll(filepath.Join("src", "__generated__")); err != nil {
			t.Fatal(err)
		}
		run(t, filepath.Join("node_modules", ".bin", "relay-compiler"))
		var steps [][]struct {
			ID     string  `json:"id"`
			Name   *string `json:"name"`
			Events *int    `json:"events"`
		}
		out := run(t, "node", "relay.mjs", proxy.url, key)
		held(t, proxy, out)
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
