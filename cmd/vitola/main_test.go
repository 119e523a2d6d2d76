package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/venues"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// lockedBuffer is a bytes.Buffer safe to write from run's goroutine while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loopbackAddr returns a free 127.0.0.1 address.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
}

// handedOut remembers the ports this test binary gave out: the kernel may hand
// a port just closed to the next bind of :0, and two servers of one test (the
// API and the payments origin) must not be given the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// loopbackPort returns a free loopback port no other caller in this test binary
// was given.
func loopbackPort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// noEnv is a getenv that sees no environment: tests say everything with flags.
func noEnv(string) string { return "" }

// serveForTest drives run("serve", args...) until the test ends and waits for
// /health on addr; it returns what serve printed.
func serveForTest(t *testing.T, addr string, args ...string) (stdout, stderr *lockedBuffer) {
	t.Helper()
	return serveUntil(t, context.Background(), addr, args...)
}

// serveUntil is serveForTest, whose serve also stops when parent ends (as on
// SIGTERM).
func serveUntil(t *testing.T, parent context.Context, addr string, args ...string) (stdout, stderr *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(parent)
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, append([]string{"vitola", "serve", "--addr", addr, "--log-format", "json"}, args...), noEnv, nil, stdout, stderr)
	}()
	exitedEarly := false
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if runErr != nil && !exitedEarly {
				t.Errorf("serve returned %v", runErr)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop within 15 s of cancellation")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			exitedEarly = true
			t.Fatalf("serve exited early: %v\n%s", runErr, stderr)
		default:
		}
		target := addr
		if strings.HasSuffix(addr, ":0") { // the port given is in the log
			target = listenedOn(stderr.String(), "api")
		}
		res, err := http.Get("http://" + target + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return stdout, stderr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no healthy /health within 30 s; log:\n%s", stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listenedOn finds in serve's JSON log the address its listener name is
// bound to ("" while it is not).
func listenedOn(log, name string) string {
	for _, line := range strings.Split(log, "\n") {
		var e struct{ Message, Component, Addr string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "listening" && e.Component == name {
			return strings.TrimPrefix(e.Addr, "http://")
		}
	}
	return ""
}

// admin runs an admin command and returns its last line of standard output.
func admin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"vitola"}, args...), noEnv, nil, &stdout, &stderr)
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	return lines[len(lines)-1], err
}

// postJSON POSTs a JSON body to url with the developer key (none when empty)
// and the Accept header (none when empty), and returns the response with its
// body read.
func postJSON(t *testing.T, url, key, accept string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if key != "" {
		req.Header.Set("x-service-key", key)
	}
	return send(t, req)
}

// send sends req and returns the response with its body read.
func send(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res, raw
}

func graphql(t *testing.T, url, key, query string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	// The specification's media type: a request that fails before execution
	// answers 400 (in application/json it would answer 200 with errors).
	res, raw := postJSON(t, url, key, "application/graphql-response+json", body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("not JSON (%d): %s", res.StatusCode, raw)
	}
	return res.StatusCode, out
}

var keyPattern = regexp.MustCompile(`^vk_[0-9a-z]{16}_[0-9A-Za-z]{43}$`)

func TestServeDemoAndAdminCommands(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	stdout, _ := serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", loopbackAddr(t), "--public-url", "http://"+addr)

	demoKey := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))
	if !keyPattern.MatchString(demoKey) || !strings.Contains(stdout.String(), demoKey) {
		t.Fatalf("demo key %q not printed (stdout %q)", demoKey, stdout)
	}
	checkDemoWidgetLink(t, stdout.String(), addr)
	if link := strings.TrimSpace(readFile(t, filepath.Join(data, "widget-link.txt"))); !strings.Contains(stdout.String(), "\n"+link+"\n") || !strings.Contains(link, "/examples/widget/?") {
		t.Fatalf("data/widget-link.txt holds %q, not the link printed (stdout %q)", link, stdout)
	}
	if line, err := admin(t, "credits", "balance", "--data", data, "--key", demoKey); err != nil || !strings.HasSuffix(line, " has 100 credits") {
		t.Fatalf("the demo key's credits: %q %v", line, err)
	}

	// A key made by the admin command works against the running server at once.
	key, err := admin(t, "keys", "create", "--name", "me", "--data", data)
	if err != nil || !keyPattern.MatchString(key) {
		t.Fatalf("keys create: %q, %v", key, err)
	}
	status, out := graphql(t, "http://"+addr+"/graphql", key, `{ searchCigars(query: "padron", first: 3) { edges { node { id name brand { name } } } } }`)
	edges, _ := out["data"].(map[string]any)["searchCigars"].(map[string]any)["edges"].([]any)
	if status != 200 || len(edges) == 0 {
		t.Fatalf("searchCigars with the new key: %d %v", status, out)
	}
	for _, e := range edges {
		if b := e.(map[string]any)["node"].(map[string]any)["brand"].(map[string]any)["name"]; b != "Padrón" {
			t.Fatalf("edge brand %v", b)
		}
	}

	line, err := admin(t, "keys", "list", "--data", data)
	if err != nil || line != "3 keys, 3 active" { // demo, demo-widget, me
		t.Fatalf("keys list: %q, %v", line, err)
	}
	line, err = admin(t, "keys", "revoke", key, "--data", data) // README's order: the key first
	if err != nil || !strings.HasPrefix(line, "revoked ") {
		t.Fatalf("keys revoke: %q, %v", line, err)
	}
	// Every replica stops accepting a revoked key within the key cache's
	// TTL: a request that starts after it is refused, however busy the
	// machine.
	time.Sleep(access.CacheTTL)
	if status, _ := graphql(t, "http://"+addr+"/graphql", key, `{ __typename }`); status != 401 {
		t.Fatalf("revoked key still works after %s: %d", access.CacheTTL, status)
	}

	line, err = admin(t, "migrate", "--data", data)
	if err != nil || line != "migrated access, catalog, users, venues, payments, matching (sqlite)" {
		t.Fatalf("migrate: %q, %v", line, err)
	}
}

// checkDemoWidgetLink follows the widget link --demo prints: the page is served
// under localhost, and its publishable key reads the venue's feed from there (the
// browser sends that Origin on its cross-origin call to 127.0.0.1) and from no
// other origin. TestWidgetInChromium drives the page itself in a browser.
func checkDemoWidgetLink(t *testing.T, stdout, addr string) {
	t.Helper()
	m := regexp.MustCompile(`(http://localhost:\d+)/examples/widget/\?(\S+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no widget link printed: %q", stdout)
	}
	page, _ := http.Get(m[0])
	if page == nil || page.StatusCode != 200 {
		t.Fatalf("widget page %s: %v", m[0], page)
	}
	page.Body.Close()
	q, _ := url.ParseQuery(m[2])
	if q.Get("api") != "http://"+addr || !strings.HasPrefix(q.Get("key"), "vpk_") || !strings.HasPrefix(q.Get("venue"), "ven_") {
		t.Fatalf("widget link %s", m[0])
	}
	for origin, want := range map[string]int{m[1]: 200, "http://" + addr: 403, "https://elsewhere.example": 403} {
		req, _ := http.NewRequest("GET", q.Get("api")+"/venues/"+q.Get("venue")+"/sessions?limit=10", nil)
		req.Header.Set("x-service-key", q.Get("key"))
		req.Header.Set("Origin", origin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Data []any }
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != want || (want == 200 && len(body.Data) != 10) {
			t.Errorf("feed with the widget key from %s: %d with %d sessions, want %d", origin, res.StatusCode, len(body.Data), want)
		}
	}
}

func TestDemoKeyIsPrintedOnlyOnce(t *testing.T) {
	data := t.TempDir()
	for i := range 2 {
		t.Run([]string{"first start", "second start"}[i], func(t *testing.T) {
			stdout, _ := serveForTest(t, loopbackAddr(t), "--demo", "--data", data, "--payments-addr", loopbackAddr(t))
			if printed := strings.Contains(stdout.String(), "vk_"); printed != (i == 0) {
				t.Fatalf("start %d printed a key: %v (%q)", i+1, printed, stdout)
			}
		})
	}
}

func TestWithoutDemoNoDemoDataOrKey(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	stdout, _ := serveForTest(t, addr, "--data", data, "--payments-addr", loopbackAddr(t))
	if _, err := os.Stat(filepath.Join(data, "demo-key.txt")); err == nil || stdout.String() != "" {
		t.Fatalf("demo key without --demo: %q", stdout)
	}
	key, _ := admin(t, "keys", "create", "--name", "x", "--data", data)
	_, out := graphql(t, "http://"+addr+"/graphql", key, `{ brands(first: 5) { edges { cursor } } }`)
	if edges := out["data"].(map[string]any)["brands"].(map[string]any)["edges"].([]any); len(edges) != 0 {
		t.Fatalf("demo data without --demo: %v", edges)
	}
}

func TestAdminCommandsFailLoudly(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"keys"},
		{"keys", "create", "--data", data},
		{"keys", "create", "--name", "x", "--entitlement", "api.everything", "--data", data},
		{"keys", "revoke", "--data", data, "key_0000000000000000"},
		{"keys", "revoke", "--data", data},
		{"serve", "--component", "nope"},
		{"serve", "--data", data, "--addr", "256.0.0.1:1"},
		{"migrate", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"},
	} {
		if _, err := admin(t, args...); err == nil {
			t.Errorf("vitola %v succeeded", args)
		}
	}
}

func TestSettingsFlagOverEnvironmentOverDefault(t *testing.T) {
	env := map[string]string{"VITOLA_ADDR": "127.0.0.1:9999", "VITOLA_MAX_COST": "500", "VITOLA_SUBGRAPH_URLS": "catalog=http://c:1/graphql,users=http://u:2/graphql"}
	getenv := func(k string) string { return env[k] }
	s, err := parseServe([]string{"--max-cost", "700"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != "127.0.0.1:9999" || s.Limits.MaxCost != 700 || s.PaymentsAddr != "127.0.0.1:8081" || s.store.DataDir != "./data" {
		t.Fatalf("settings = %+v", s)
	}
	if s.SubgraphURLs["users"] != "http://u:2/graphql" || len(s.SubgraphURLs) != 2 {
		t.Fatalf("subgraph URLs = %v", s.SubgraphURLs)
	}
}

// The Stripe API URL reaches the payments subgraph: from the environment,
// overridden by the flag; Stripe's own by default.
func TestStripeAPIURLSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, ""},
		{nil, map[string]string{"VITOLA_STRIPE_API_URL": "http://127.0.0.1:12111"}, "http://127.0.0.1:12111"},
		{[]string{"--stripe-api-url", "https://stripe-proxy.example"}, map[string]string{"VITOLA_STRIPE_API_URL": "http://127.0.0.1:12111"}, "https://stripe-proxy.example"},
	} {
		s, err := parseServe(tc.args, func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if got := s.paymentsOptions(s.PaymentsAddr).StripeAPIURL; got != tc.want {
			t.Errorf("args %v, env %v: Stripe API URL %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// The capacity wait is 5 s by default, read from the environment,
// overridden by the flag, and must be positive.
func TestCapacityWaitSetting(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		want    time.Duration
		wantErr bool
	}{
		{nil, nil, 5 * time.Second, false},
		{nil, map[string]string{"VITOLA_CAPACITY_WAIT": "2s"}, 2 * time.Second, false},
		{[]string{"--capacity-wait", "750ms"}, map[string]string{"VITOLA_CAPACITY_WAIT": "2s"}, 750 * time.Millisecond, false},
		{[]string{"--capacity-wait", "0s"}, nil, 0, true},
	} {
		s, err := parseServe(tc.args, func(k string) string { return tc.env[k] })
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "--capacity-wait") {
				t.Errorf("args %v: err = %v, want a refusal naming --capacity-wait", tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.CapacityWait != tc.want {
			t.Errorf("args %v, env %v: capacity wait %v, want %v", tc.args, tc.env, s.CapacityWait, tc.want)
		}
	}
}

// Credentials set in the environment never show in usage text, which -h and any
// mistyped flag print; the environment still sets them, and a flag still wins.
func TestUsageNeverPrintsCredentials(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://app:db-pass-1@db/x", "REDIS_URL": "redis://:redis-pass-2@r:6379", "VITOLA_INTERNAL_KEY": "internal-key-3-0123456789abcdef0123"}
	getenv := func(k string) string { return env[k] }
	for _, args := range [][]string{{"serve", "-h"}, {"serve", "--nope"}, {"keys", "list", "--nme"}, {"migrate", "-h"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"vitola"}, args...), getenv, nil, &stdout, &stderr)
		if help := args[len(args)-1] == "-h"; help != (err == nil) {
			t.Errorf("vitola %v: %v", args, err)
		}
		for _, secret := range []string{"db-pass-1", "redis-pass-2", "internal-key-3"} {
			if strings.Contains(stdout.String()+stderr.String(), secret) {
				t.Errorf("vitola %v printed %s", args, secret)
			}
		}
	}
	s, err := parseServe([]string{"--redis-url", "redis://flag"}, getenv)
	if err != nil || s.store.DatabaseURL != env["DATABASE_URL"] || s.InternalKey != env["VITOLA_INTERNAL_KEY"] || s.RedisURL != "redis://flag" {
		t.Fatalf("settings = %+v, %v", s, err)
	}
}

func TestLoggedURLsHidePasswords(t *testing.T) {
	got := redactURLs(map[string]string{"users": "https://svc:pa55@users.internal/graphql", "catalog": "http://catalog:8092/graphql"})
	if strings.Contains(got["users"], "pa55") || got["catalog"] != "http://catalog:8092/graphql" {
		t.Fatalf("redacted = %v", got)
	}
}

// TestHelpListsEveryComponent: `vitola help` and the settings reference name
// every component --component accepts, no more.
func TestHelpListsEveryComponent(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"vitola", "help"}, noEnv, nil, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	help := strings.Join(strings.Fields(stdout.String()), " ")
	if want := "--component (" + strings.Join(components, ", ") + ")"; !strings.Contains(help, want) {
		t.Errorf("vitola help does not say %q:\n%s", want, stdout.String())
	}
	row := regexp.MustCompile("(?m)^\\| `VITOLA_COMPONENT` \\|.*$").FindString(readFile(t, settingsPage))
	if want := strings.Join(components, ", ") + ";"; !strings.Contains(row, want) {
		t.Errorf("the settings reference's --component row %q does not list %q", row, want)
	}
}

// TestEverySettingIsDocumented keeps the settings reference complete.
func TestEverySettingIsDocumented(t *testing.T) {
	readme := readFile(t, settingsPage)
	fs := newFlagSet("serve")
	(&serveSettings{SubgraphURLs: urlMap{}}).register(fs, noEnv)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(readme, "`--"+f.Name) {
			t.Errorf("%s does not document --%s", settingsPage, f.Name)
		}
		if env := regexp.MustCompile(`env ([A-Z_]+)`).FindStringSubmatch(f.Usage); env != nil && !strings.Contains(readme, env[1]) {
			t.Errorf("%s does not document %s", settingsPage, env[1])
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docsText is what a reader reads: README.md and every page under docs/
// written by hand (the command-line and settings references are generated
// from the commands themselves, so they are left out).
func docsText(t *testing.T) string {
	t.Helper()
	texts := []string{readFile(t, "../../README.md")}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") || path == cliPage || path == settingsPage {
			return err
		}
		texts = append(texts, readFile(t, path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(texts, "\n")
}

// TestRouterFrontsAForeignGraph runs `serve --component router --router-config`
// over a composition that is not Vitola's own (testdata/foreign: services named
// people and places, answering without Vitola's internal-token check): the same
// gateway, key check and limits, URLs from --subgraph-url, and no internal token
// handed to subgraphs outside the platform.
func TestRouterFrontsAForeignGraph(t *testing.T) {
	var mu sync.Mutex
	tokens := 0
	serve := func(name string) *httptest.Server {
		sg, err := platform.OpenSubgraph(context.Background(), name, sqldb.Config{DataDir: t.TempDir()}, platform.SubgraphOptions{Demo: true, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sg.Store.Close() })
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(trust.Header) != "" {
				mu.Lock()
				tokens++
				mu.Unlock()
			}
			sg.GraphQL.ServeHTTP(w, r)
		}))
		t.Cleanup(s.Close)
		return s
	}
	people, places := serve("users"), serve("venues")
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--component", "router", "--router-config", "testdata/foreign/router-config.json", "--data", data,
		"--internal-key", "0123456789abcdef0123456789abcdef",
		"--subgraph-url", "people="+people.URL+"/graphql", "--subgraph-url", "places="+places.URL+"/graphql")
	key, err := admin(t, "keys", "create", "--name", "foreign", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr + "/graphql"

	status, out := graphql(t, url, key, `{ venues(first: 2) { edges { node { name events(first: 2) { edges { node { name venue { city } } } } } } } user(id: "`+usersdemo.UserID("ana@vitola.example")+`") { displayName } }`)
	if status != 200 || out["errors"] != nil || !strings.Contains(toJSON(out), "Ana Ruiz") || !strings.Contains(toJSON(out), "The Ember Room") {
		t.Fatalf("query through the foreign graph: %d %v", status, out)
	}
	if tokens != 0 {
		t.Fatalf("%d internal tokens sent to foreign subgraphs", tokens)
	}
	if status, _ := graphql(t, url, "", `{ venues { edges { cursor } } }`); status != 401 {
		t.Fatalf("no key: %d", status)
	}
	deep := `{ venues { edges { node { events { edges { node { venue { events { edges { node { name } } } } } } } } } } }`
	if status, out := graphql(t, url, key, deep); status != 400 || !strings.Contains(toJSON(out), "DEPTH_LIMIT_EXCEEDED") {
		t.Fatalf("depth limit on the foreign graph: %d %v", status, out)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestImportCatalogWithoutBrandCountry imports the format the import was
// specified with (no brandCountry): a new brand takes its cigars' common
// origin, or no country (null in the graph), and the last line says which.
func TestImportCatalogWithoutBrandCountry(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--data", data, "--payments-addr", loopbackAddr(t))
	key, _ := admin(t, "keys", "create", "--name", "import", "--data", data)
	leaf := `{"region": "Cuba", "type": "Corojo", "shade": null, "year": null, "label": "Cuban Corojo"}`
	cigar := func(brand, name, origin string) string {
		return `{"brand": "` + brand + `", "name": "` + name + `", "origin": "` + origin + `", "wrapper": [` + leaf + `], "binder": [], "filler": [], "products": []}`
	}
	file := filepath.Join(t.TempDir(), "catalog.jsonl")
	os.WriteFile(file, []byte(cigar("Xochi Habana", "Xochi Robusto", "Cuba")+"\n"+cigar("Xochi Habana", "Xochi Lancero", "Cuba")+"\n"+
		cigar("Yrigoyen Dos Tierras", "Yrigoyen Toro", "Nicaragua")+"\n"+cigar("Yrigoyen Dos Tierras", "Yrigoyen Corona", "Honduras")+"\n"), 0o600)
	line, err := admin(t, "import", "catalog", "--data", data, file)
	want := "imported 4 cigars (4 new, 2 new brands; country from their cigars' origin: Xochi Habana; " +
		"country unknown (their cigars' origins differ; give brandCountry): Yrigoyen Dos Tierras) and 0 products from "
	if err != nil || !strings.HasPrefix(line, want) {
		t.Fatalf("import: %q, %v\nwant the prefix %q", line, err, want)
	}

	_, out := graphql(t, "http://"+addr+"/graphql", key, `{ brands(first: 100) { edges { node { name country } } } }`)
	var res struct {
		Data struct {
			Brands struct {
				Edges []struct {
					Node struct{ Name, Country *string }
				}
			}
		}
		Errors []any
	}
	json.Unmarshal([]byte(toJSON(out)), &res)
	got := map[string]string{}
	for _, e := range res.Data.Brands.Edges {
		got[*e.Node.Name] = "null"
		if e.Node.Country != nil {
			got[*e.Node.Name] = *e.Node.Country
		}
	}
	if len(res.Errors) > 0 || got["Xochi Habana"] != "Cuba" || got["Yrigoyen Dos Tierras"] != "null" {
		t.Fatalf("brands' countries in the graph: %v, errors %v", got, res.Errors)
	}
}

func TestImportCatalogIsSearchableLive(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--data", data, "--payments-addr", loopbackAddr(t))
	key, _ := admin(t, "keys", "create", "--name", "import", "--data", data)
	leaf := `{"region": "Honduras", "type": "Corojo", "shade": null, "year": null, "label": "Honduran Corojo"}`
	good := `{"brand": "Zzyzx Cigars", "brandCountry": "Honduras", "brandAliases": ["ZZ"], "name": "Quetzal Lancero", "origin": "Honduras", "wrapper": [` + leaf + `], "binder": [` + leaf + `], "filler": [` + leaf + `], "products": [{"gtin": "4006381333931", "name": "Box of 10", "quantity": 10}]}`
	file := filepath.Join(t.TempDir(), "catalog.jsonl")
	os.WriteFile(file, []byte(good+"\n"), 0o600)

	search := func() int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/cigars/search?q=quetzal+lancero", nil)
		req.Header.Set("x-service-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct{ Data []any }
		json.NewDecoder(res.Body).Decode(&body)
		return len(body.Data)
	}
	if search() != 0 {
		t.Fatal("found before the import")
	}
	line, err := admin(t, "import", "catalog", "--data", data, file)
	if err != nil || !strings.HasPrefix(line, "imported 1 cigars (1 new, 1 new brands) and 1 products") {
		t.Fatalf("import: %q, %v", line, err)
	}
	// Live: the server picks the import up by itself, in well under a second
	// on a quiet machine (a benchmark measures it); the bound is for a busy one.
	imported := time.Now()
	for search() != 1 {
		if time.Since(imported) > 30*time.Second {
			t.Fatal("imported cigar not searchable within 30 s")
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("the imported cigar was searchable %s after the import command returned", time.Since(imported).Round(time.Millisecond))

	line, err = admin(t, "import", "catalog", "--data", data, file)
	if err != nil || !strings.HasPrefix(line, "imported 1 cigars (0 new, 0 new brands)") {
		t.Fatalf("re-import: %q, %v", line, err)
	}

	// A bad line: the command fails naming it, and nothing of the file lands.
	other := strings.Replace(good, "Quetzal Lancero", "Quetzal Corona", 1)
	other = strings.Replace(other, "4006381333931", "036000291452", 1)
	os.WriteFile(file, []byte(other+"\n"+`{"brand": "Zzyzx Cigars", "name": ""}`+"\n"), 0o600)
	if _, err := admin(t, "import", "catalog", "--data", data, file); err == nil || !strings.Contains(err.Error(), "line 2: name is required") {
		t.Fatalf("bad file: %v", err)
	}
	time.Sleep(2 * 250 * time.Millisecond)
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/cigars/search?q=quetzal+corona", nil)
	req.Header.Set("x-service-key", key)
	res, _ := http.DefaultClient.Do(req)
	var body struct{ Data []any }
	json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if len(body.Data) != 0 {
		t.Fatal("a line of a rejected file was imported")
	}
}

func TestUsersCreate(t *testing.T) {
	data := t.TempDir()
	id, err := admin(t, "users", "create", "--data", data, "--email", "Ben@Example.com", "--password", "a long passphrase", "--display-name", "Ben", "--first-name", "Ben")
	if err != nil || !strings.HasPrefix(id, "usr_") {
		t.Fatalf("users create: %q, %v", id, err)
	}
	if _, err := admin(t, "users", "create", "--data", data, "--email", "ben@example.com", "--password", "another passphrase", "--display-name", "Ben 2"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate email: %v", err)
	}
	// The password can come from standard input.
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"vitola", "users", "create", "--data", data, "--email", "cy@example.com", "--password", "-", "--display-name", "Cy"},
		noEnv, strings.NewReader("piped passphrase\n"), &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "usr_") {
		t.Fatalf("password from stdin: %v %q", err, stdout.String())
	}
	for _, args := range [][]string{
		{"users", "create", "--data", data, "--email", "x@example.com", "--password", "short", "--display-name", "X"},
		{"users", "create", "--data", data, "--email", "not-an-email", "--password", "a long passphrase", "--display-name", "X"},
		{"users", "create", "--data", data, "--email", "x@example.com"},
		{"users", "delete"},
	} {
		if _, err := admin(t, args...); err == nil {
			t.Errorf("vitola %v succeeded", args)
		}
	}
}

func TestOAuthCommands(t *testing.T) {
	data := t.TempDir()
	if _, err := admin(t, "users", "create", "--data", data, "--email", "eve@example.com", "--password", "a long passphrase", "--display-name", "Eve"); err != nil {
		t.Fatal(err)
	}
	line, err := admin(t, "oauth", "clients", "create", "--data", data, "--name", "App", "--redirect-uri", "https://app.example/cb")
	idAndSecret := strings.Fields(line)
	if err != nil || len(idAndSecret) != 2 || !strings.HasPrefix(idAndSecret[0], "cli_") || !strings.HasPrefix(idAndSecret[1], "cs_") {
		t.Fatalf("confidential client: %q, %v", line, err)
	}
	pub, err := admin(t, "oauth", "clients", "create", "--data", data, "--name", "CLI", "--redirect-uri", "http://127.0.0.1:9000/cb", "--public")
	if err != nil || !strings.HasPrefix(pub, "cli_") || strings.Contains(pub, " ") {
		t.Fatalf("public client: %q, %v", pub, err)
	}
	tok, err := admin(t, "oauth", "token", "--data", data, "--public-url", "https://api.example", "--user", "EVE@example.com", "--client", pub, "--scope", "profile:read email:read")
	if err != nil || strings.Count(tok, ".") != 2 {
		t.Fatalf("oauth token: %q, %v", tok, err)
	}
	st, err := userssql.Open(context.Background(), sqldb.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, _ := oauth.LiveKeys(context.Background(), st, time.Now())
	claims, err := accesstoken.Verifier{Issuer: "https://api.example", Keys: keys.PublicKeys()}.Verify(tok)
	if err != nil || claims.ClientID != pub || claims.Scope != "profile:read email:read" || !strings.HasPrefix(claims.Subject, "usr_") {
		t.Fatalf("minted token: %+v, %v", claims, err)
	}
	kid, err := admin(t, "oauth", "keys", "rotate", "--data", data)
	if err != nil || !strings.HasPrefix(kid, "sk_") {
		t.Fatalf("keys rotate: %q, %v", kid, err)
	}
	for _, args := range [][]string{
		{"oauth", "token", "--data", data, "--user", "nobody@example.com", "--client", pub, "--scope", "profile:read"},
		{"oauth", "token", "--data", data, "--user", "eve@example.com", "--client", "cli_0000000000000000", "--scope", "profile:read"},
		{"oauth", "token", "--data", data, "--user", "eve@example.com", "--client", pub, "--scope", "root:all"},
		{"oauth", "clients", "create", "--data", data, "--name", "Bad", "--redirect-uri", "http://app.example/cb"},
		{"oauth", "clients", "create", "--data", data, "--name", "NoRedirect"},
		{"oauth", "frobnicate"},
	} {
		if _, err := admin(t, args...); err == nil {
			t.Errorf("vitola %v succeeded", args)
		}
	}
}

func TestPublicURL(t *testing.T) {
	for _, tc := range []struct{ configured, addr, want string }{
		{"", "127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"", "0.0.0.0:9000", "http://127.0.0.1:9000"},
		{"", ":9000", "http://127.0.0.1:9000"},
		{"", "[::]:9000", "http://127.0.0.1:9000"},
		{"", "[::1]:9000", "http://[::1]:9000"},
		{"", "localhost:9000", "http://localhost:9000"},
		{"https://api.example/", "127.0.0.1:9000", "https://api.example"},
		{"https://api.example", "127.0.0.1:9000", "https://api.example"},
	} {
		if got := publicURL(tc.configured, tc.addr); got != tc.want {
			t.Errorf("publicURL(%q, %q) = %q, want %q", tc.configured, tc.addr, got, tc.want)
		}
	}
}

// TestPublicURLFollowsTheAddress: without --public-url and
// --payments-public-url, the OAuth issuer and audience and the payments origin
// are the addresses serve actually listens on (port 0 included), said in the
// log; admin commands that mint tokens derive theirs from --addr or
// VITOLA_ADDR the same way, so their tokens work against that server.
func TestPublicURLFollowsTheAddress(t *testing.T) {
	data := t.TempDir()
	_, log := serveForTest(t, "127.0.0.1:0", "--data", data, "--payments-addr", "127.0.0.1:0")
	api, pay := listenedOn(log.String(), "api"), listenedOn(log.String(), "payments")
	if strings.HasSuffix(api, ":0") || strings.HasSuffix(pay, ":0") || api == pay {
		t.Fatalf("listened on %q and %q", api, pay)
	}
	var started struct{ PublicURL, PaymentsPublicURL string }
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, `"message":"public URLs"`) {
			json.Unmarshal([]byte(line), &started)
		}
	}
	if started.PublicURL != "http://"+api || started.PaymentsPublicURL != "http://"+pay {
		t.Fatalf("the log says the public URLs are %+v, want http://%s and http://%s", started, api, pay)
	}

	res, err := http.Get("http://" + api + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	json.NewDecoder(res.Body).Decode(&meta)
	res.Body.Close()
	if meta.Issuer != "http://"+api || meta.TokenEndpoint != "http://"+api+"/oauth/token" {
		t.Fatalf("discovery: issuer %q, token endpoint %q; want http://%s", meta.Issuer, meta.TokenEndpoint, api)
	}

	// The checkout's same-origin check names the payments origin listened on:
	// a request from it gets as far as wanting its session cookie (401).
	for origin, want := range map[string]int{"http://" + pay: 401, "http://127.0.0.1:8081": 403} {
		req, _ := http.NewRequest("POST", "http://"+pay+"/api/v1/payment-sessions/current/cancel", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("X-Vitola-Checkout", "1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("checkout action from %s: %d, want %d", origin, res.StatusCode, want)
		}
	}

	key, _ := admin(t, "keys", "create", "--name", "me", "--data", data)
	if _, err := admin(t, "users", "create", "--data", data, "--email", "ana@example.com", "--password", "a long passphrase", "--display-name", "Ana"); err != nil {
		t.Fatal(err)
	}
	client, err := admin(t, "oauth", "clients", "create", "--data", data, "--name", "CLI", "--redirect-uri", "http://127.0.0.1:9000/cb", "--public")
	if err != nil {
		t.Fatal(err)
	}
	me := func(token string) int {
		req, _ := http.NewRequest("GET", "http://"+api+"/v1/me", nil)
		req.Header.Set("x-service-key", key)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	mint := []string{"oauth", "token", "--data", data, "--user", "ana@example.com", "--client", client, "--scope", "profile:read"}
	byFlag, err := admin(t, append(mint, "--addr", api)...)
	if err != nil || me(byFlag) != 200 {
		t.Fatalf("a token minted with --addr %s: %v, /v1/me %d", api, err, me(byFlag))
	}
	var stdout bytes.Buffer
	env := map[string]string{"VITOLA_ADDR": api}
	if err := run(context.Background(), append([]string{"vitola"}, mint...), func(k string) string { return env[k] }, nil, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if got := me(lines[len(lines)-1]); got != 200 {
		t.Fatalf("a token minted with VITOLA_ADDR=%s: /v1/me %d", api, got)
	}
	// Minted for the default address, it is refused here.
	if other, _ := admin(t, mint...); me(other) != 401 {
		t.Fatal("a token for another public URL was accepted")
	}
}

// TestImportExamplesAddToTheDemo imports the importing page's examples
// into the demo's stores in the page's order (the docs test runs them as
// written; this one looks at what they did): each adds records of its own
// and overwrites nothing of the demo.
func TestImportExamplesAddToTheDemo(t *testing.T) {
	data := t.TempDir()
	serveForTest(t, loopbackAddr(t), "--demo", "--data", data, "--payments-addr", loopbackAddr(t))
	page := readFile(t, "../../docs/operations/importing.md")
	example := func(kind string) string {
		start := "cat > " + kind + ".jsonl <<'EOF'\n"
		i := strings.Index(page, start)
		if i < 0 {
			t.Fatalf("the importing page has no %q", start)
		}
		body := page[i+len(start):]
		return body[:strings.Index(body, "\nEOF\n")+1]
	}
	if _, err := admin(t, "users", "create", "--data", data, "--email", "maria@example.com", "--password", "a long passphrase", "--display-name", "María Sol"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ kind, want string }{
		{"cigars", "imported 1 cigars (1 new, 1 new brands) and 1 products"},
		{"venues", "imported 1 venues (1 new)"},
		{"events", "imported 1 events (1 new)"},
		{"sessions", "imported 1 sessions (1 public, 0 private)"},
	} {
		kind := step.kind
		if kind == "cigars" {
			kind = "catalog"
		}
		file := filepath.Join(t.TempDir(), step.kind+".jsonl")
		os.WriteFile(file, []byte(example(step.kind)), 0o600)
		if line, err := admin(t, "import", kind, "--data", data, file); err != nil || !strings.HasPrefix(line, step.want) {
			t.Fatalf("the importing page's %s example: %q, %v; want %q", step.kind, line, err, step.want)
		}
	}
	var venue struct{ Name string }
	json.Unmarshal([]byte(example("venues")), &venue)
	for _, v := range venuesdemo.Venues {
		if v.Name == venue.Name {
			t.Errorf("the importing page's venue example is named %q, as a demo venue", venue.Name)
		}
	}
}

func TestImportVenuesEventsAndSessions(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", loopbackAddr(t))
	key, _ := admin(t, "keys", "create", "--name", "import", "--data", data)
	if _, err := admin(t, "users", "create", "--data", data, "--email", "dora@example.com", "--password", "a long passphrase", "--display-name", "Dora V."); err != nil {
		t.Fatal(err)
	}
	feed := func(query string) (count int, body string) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/venues/"+venues.VenueID("humo-norte")+"/sessions"+query, nil)
		req.Header.Set("x-service-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var out struct{ Meta struct{ Count int } }
		json.Unmarshal(raw, &out)
		return out.Meta.Count, string(raw)
	}

	// Sessions need their venue: in the wrong order nothing lands.
	if _, err := admin(t, "import", "sessions", "--data", data, "testdata/sessions.jsonl"); err == nil ||
		!strings.Contains(err.Error(), "line 1: venue humo-norte is not in the store: import it first") || !strings.Contains(err.Error(), "nothing was imported") {
		t.Fatalf("sessions before venues: %v", err)
	}
	for _, step := range []struct{ kind, want string }{
		{"venues", "imported 2 venues (2 new) from testdata/venues.jsonl"},
		{"events", "imported 2 events (2 new) from testdata/events.jsonl"},
		{"sessions", "imported 3 sessions (2 public, 1 private) from testdata/sessions.jsonl"},
	} {
		line, err := admin(t, "import", step.kind, "--data", data, "testdata/"+step.kind+".jsonl")
		if err != nil || !strings.HasPrefix(line, step.want) {
			t.Fatalf("import %s: %q, %v", step.kind, line, err)
		}
	}
	// Importing again changes nothing.
	if line, _ := admin(t, "import", "venues", "--data", data, "testdata/venues.jsonl"); !strings.HasPrefix(line, "imported 2 venues (0 new)") {
		t.Fatalf("re-import venues: %q", line)
	}
	if line, _ := admin(t, "import", "events", "--data", data, "testdata/events.jsonl"); !strings.HasPrefix(line, "imported 2 events (0 new)") {
		t.Fatalf("re-import events: %q", line)
	}
	if _, err := admin(t, "import", "sessions", "--data", data, "testdata/sessions.jsonl"); err != nil {
		t.Fatal(err)
	}

	// The feed shows the public sessions only, newest first, joined across the
	// subgraphs; the event is the venue's, featuring the brand named in any case.
	count, body := feed("")
	if count != 2 || strings.Contains(body, "Just for me") || !strings.Contains(body, `"displayName":"Dora V."`) ||
		!strings.Contains(body, `"brandName":"Padrón"`) || !strings.Contains(body, `"name":"Humo Norte"`) ||
		strings.Index(body, "2026-11-21T19:00:00.000Z") > strings.Index(body, "2026-11-20T20:00:00.000Z") ||
		!strings.Contains(body, `"durationSeconds":4200`) {
		t.Fatalf("feed after import: %d %s", count, body)
	}
	if count, body := feed("?featured=true"); count != 1 || !strings.Contains(body, "Cocoa and cedar.") {
		t.Fatalf("featured feed: %d %s", count, body)
	}
	status, out := graphql(t, "http://"+addr+"/graphql", key, `{ venue(id: "`+venues.VenueID("humo-norte")+`") { website events { edges { node { name startsAt brand { name } } } } } }`)
	if status != 200 || !strings.Contains(toJSON(out), `"name":"Padrón Night","startsAt":"2027-01-08T19:00:00.000Z"`) || !strings.Contains(toJSON(out), `"brand":{"name":"Padrón"}`) {
		t.Fatalf("imported venue and event: %d %s", status, toJSON(out))
	}

	// A bad line anywhere: the command names it and nothing of the file lands.
	bad := filepath.Join(t.TempDir(), "sessions.jsonl")
	os.WriteFile(bad, []byte(`{"userEmail": "dora@example.com", "venue": "humo-norte", "startedAt": "2026-11-23T20:00:00Z", "visibility": "public"}`+"\n"+
		`{"userEmail": "nobody@example.com", "venue": "humo-norte", "startedAt": "2026-11-23T20:00:00Z"}`+"\n"), 0o600)
	if _, err := admin(t, "import", "sessions", "--data", data, bad); err == nil || !strings.Contains(err.Error(), "line 2: user nobody@example.com has no account") {
		t.Fatalf("bad sessions file: %v", err)
	}
	if count, _ := feed(""); count != 2 {
		t.Fatalf("a rejected file changed the feed: %d sessions", count)
	}
	for _, c := range []struct{ kind, line, want string }{
		{"venues", `{"name": "X", "city": "Y"}`, "line 1: country is required"},
		{"events", `{"venue": "humo-norte", "name": "Late", "startsAt": "2027-01-08T19:00:00Z", "endsAt": "2027-01-08T18:00:00Z"}`, "line 1: endsAt must be after startsAt"},
		{"events", `{"venue": "humo-norte", "name": "X", "startsAt": "2027-01-08T19:00:00Z", "endsAt": "2027-01-08T20:00:00Z", "brand": "No Such Brand"}`, `line 1: brand "No Such Brand" is not in the catalog`},
		{"sessions", `{"userEmail": "dora@example.com", "cigarId": "cig_0000000000000000", "startedAt": "2026-11-23T20:00:00Z"}`, "line 1: cigar cig_0000000000000000 is not in the catalog"},
		{"sessions", `{"userEmail": "dora@example.com", "startedAt": "yesterday"}`, `line 1: startedAt "yesterday" is not an RFC 3339 date-time`},
		{"stores", `{}`, `KIND "stores": want catalog, venues, events or sessions`},
	} {
		os.WriteFile(bad, []byte(c.line+"\n"), 0o600)
		if _, err := admin(t, "import", c.kind, "--data", data, bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import %s %s: %v, want %q", c.kind, c.line, err, c.want)
		}
	}
}

func TestCreditsCommands(t *testing.T) {
	data := t.TempDir()
	key, err := admin(t, "keys", "create", "--name", "paid", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	id := "key_" + strings.Split(key, "_")[1] // vk_<id>_<secret>
	if line, err := admin(t, "credits", "balance", "--data", data, "--key", key); err != nil || line != id+" has 0 credits" {
		t.Fatalf("a new key has no credits: %q %v", line, err)
	}
	if line, err := admin(t, "credits", "add", "--data", data, "--key", key, "--amount", "25"); err != nil || line != "granted 25 credits to "+id+": 25 credits now" {
		t.Fatalf("credits add by key: %q %v", line, err)
	}
	if line, err := admin(t, "credits", "add", "--data", data, "--key", id, "--amount", "5", "--note", "support ticket 12"); err != nil || line != "granted 5 credits to "+id+": 30 credits now" {
		t.Fatalf("credits add by ID: %q %v", line, err)
	}
	pk, _ := admin(t, "keys", "create", "--name", "site", "--publishable", "--origin", "https://venue.example", "--data", data)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"credits", "add", "--data", data, "--key", key}, `--amount "": want a whole number`},
		{[]string{"credits", "add", "--data", data, "--key", key, "--amount", "-3"}, "want a whole number of credits from 1"},
		{[]string{"credits", "add", "--data", data, "--key", key, "--amount", "2000000000"}, "at most 1,000,000,000"},
		{[]string{"credits", "add", "--data", data, "--amount", "1"}, "--key is required"},
		{[]string{"credits", "add", "--data", data, "--key", "key_0000000000000000", "--amount", "1"}, "no developer key with that ID"},
		{[]string{"credits", "add", "--data", data, "--key", key[:len(key)-2] + "xx", "--amount", "1"}, "credits add:"},
		{[]string{"credits", "add", "--data", data, "--key", pk, "--amount", "1"}, "publishable key, which never pays"},
		{[]string{"credits", "spend"}, `credits: unknown subcommand "spend" (want add or balance)`},
	} {
		if _, err := admin(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vitola %v: %v, want %q", c.args, err, c.want)
		}
	}
	if line, _ := admin(t, "credits", "balance", "--data", data, "--key", id); line != id+" has 30 credits" {
		t.Fatalf("balance after refusals: %q", line)
	}
}

func TestEvidenceAddIsRecognizedLive(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--demo", "--data", data, "--payments-addr", loopbackAddr(t), "--fetch-allow-cidrs", "127.0.0.1/32")
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))

	// A band no demo cigar wears, as a flat scan for the evidence and as a
	// photo on the test's image host for the query.
	band := bandart.Render(bandart.DesignFor("Evidence Test Cigars", "Quetzal Reserva"), 600)
	scan := filepath.Join(t.TempDir(), "quetzal-scan.png")
	var buf bytes.Buffer
	png.Encode(&buf, band)
	os.WriteFile(scan, buf.Bytes(), 0o600)
	buf.Reset()
	png.Encode(&buf, bandart.Photo(band, bandart.Mild, 7))
	photo := buf.Bytes()
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(photo) }))
	defer host.Close()

	post := func(path, idem, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("x-service-key", key)
		req.Header.Set("Content-Type", "application/json")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	status, fp := post("/v1/ai/cigars/fingerprint", "evidence-test", `{"imageUrl": "`+host.URL+`/quetzal.png"}`)
	if status != 200 {
		t.Fatalf("fingerprint: %d %s", status, fp)
	}
	facts, _ := catalogdemo.LoadFacts()
	line := facts.Lines[5]
	cigar := catalog.CigarID(line.Brand, line.Name+" "+line.Vitolas[len(line.Vitolas)-1].Name)
	top := func() string {
		status, body := post("/v1/ai/cigars/fingerprint/recognize", "", `{"fingerprint": `+string(fp)+`, "limit": 1}`)
		var out struct{ Candidates []struct{ ID string } }
		if json.Unmarshal(body, &out); status != 200 || len(out.Candidates) != 1 {
			t.Fatalf("recognize: %d %s", status, body)
		}
		return out.Candidates[0].ID
	}
	if top() == cigar {
		t.Fatal("recognized before its evidence was added")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"evidence", "add", "--data", data, "--cigar", "cig_0000000000000000", scan}, "no cigar cig_0000000000000000 in the catalog (nothing was added)"},
		{[]string{"evidence", "add", "--data", data, "--cigar", "Padrón", scan}, "give the catalog cigar's public ID"},
		{[]string{"evidence", "add", "--data", data, "--cigar", cigar}, "evidence add: FILE is missing"},
		{[]string{"evidence", "add", "--data", data, "--cigar", cigar, scan, "main_test.go"}, "main_test.go: image"},
		{[]string{"evidence", "add", "--data", data, "--cigar", cigar, scan, "no-such.png"}, "no-such.png: no such file"},
	} {
		if _, err := admin(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vitola %v: %v, want %q", c.args[1:], err, c.want)
		}
	}
	line2, err := admin(t, "evidence", "add", "--data", data, "--flat", "--cigar", cigar, scan)
	if err != nil || !strings.HasPrefix(line2, "added 1 evidence images for "+cigar+" ("+line.Brand+" ") {
		t.Fatalf("evidence add: %q %v", line2, err)
	}
	// Live, as imports are: well under a second on a quiet machine; the
	// bound is for a busy one.
	added := time.Now()
	for top() != cigar {
		if time.Since(added) > 30*time.Second {
			t.Fatal("added evidence not recognized within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the added evidence was recognized %s after the command returned", time.Since(added).Round(time.Millisecond))
}

// A paid request's stored response outlives the process: after a restart the
// same key and body replay it, header included, with no second charge.
func TestPaidReplaySurvivesARestart(t *testing.T) {
	data := t.TempDir()
	addr, paymentsAddr := loopbackAddr(t), loopbackAddr(t)
	args := []string{"--demo", "--data", data, "--payments-addr", paymentsAddr, "--fetch-allow-cidrs", "127.0.0.1/32"}
	var buf bytes.Buffer
	png.Encode(&buf, bandart.Photo(bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 600), bandart.Mild, 3))
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(buf.Bytes()) }))
	defer host.Close()
	send := func(t *testing.T) (int, http.Header, []byte) {
		key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/ai/cigars/fingerprint", strings.NewReader(`{"imageUrl": "`+host.URL+`/band.png"}`))
		req.Header.Set("x-service-key", key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "restart-test-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	var firstBody []byte
	t.Run("first run", func(t *testing.T) {
		serveForTest(t, addr, args...)
		status, h, b := send(t)
		if status != 200 || h.Get("X-Service-Ai-Credits-Remaining") != "99" {
			t.Fatalf("first request: %d %v %s", status, h, b)
		}
		firstBody = b
	})
	t.Run("after a restart", func(t *testing.T) {
		serveForTest(t, addr, args...)
		status, h, b := send(t)
		if status != 200 || !bytes.Equal(b, firstBody) || h.Get("X-Service-Ai-Credits-Remaining") != "99" || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay after a restart: %d %v", status, h)
		}
	})
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))
	if line, err := admin(t, "credits", "balance", "--data", data, "--key", key); err != nil || !strings.HasSuffix(line, " has 99 credits") {
		t.Fatalf("charged again after the restart: %q %v", line, err)
	}
}

// The payments admin commands print their result alone on the last line and
// fail with a message that says what to fix.
func TestPaymentsCommands(t *testing.T) {
	data := t.TempDir()
	key, err := admin(t, "keys", "create", "--name", "seller", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	line, err := admin(t, "payments", "clients", "create", "--data", data, "--name", "shop", "--developer-key", key, "--return-url", "https://shop.example/paid",
		"--origin", "https://shop.example", "--scope", "merchant_accounts:write", "--deny", "offers.create")
	creds := strings.Fields(line)
	if err != nil || len(creds) != 3 || !strings.HasPrefix(creds[0], "pcl_") || !strings.HasPrefix(creds[1], "vps_") || !strings.HasPrefix(creds[2], "whsec_") {
		t.Fatalf("clients create: %q %v", line, err)
	}
	if line, err := admin(t, "payments", "clients", "list", "--data", data); err != nil || line != "1 clients, 1 active" {
		t.Fatalf("clients list: %q %v", line, err)
	}
	if line, err := admin(t, "payments", "clients", "rotate-secret", "--data", data, creds[0]); err != nil || !strings.HasPrefix(line, "vps_") || line == creds[1] {
		t.Fatalf("rotate-secret: %q %v", line, err)
	}
	if line, err := admin(t, "payments", "resource-types", "add", "--data", data, "--description", "lounge passes", "passes"); err != nil || line != "added resource type passes" {
		t.Fatalf("resource-types add: %q %v", line, err)
	}
	merchant, err := admin(t, "payments", "merchants", "create", "--data", data, "--name", "platform", "--gateway", "sandbox")
	if err != nil || !strings.HasPrefix(merchant, "mer_") {
		t.Fatalf("merchants create: %q %v", merchant, err)
	}
	offerArgs := []string{"payments", "offers", "create", "--data", data, "--name", "50 credits", "--quantity", "50", "--price", "300", "--merchant", merchant, "--idempotency-key", "offer-1"}
	if _, err := admin(t, offerArgs...); err == nil || !strings.Contains(err.Error(), "merchant_not_ready") && !strings.Contains(err.Error(), "no usable gateway credentials") {
		t.Fatalf("an offer before the merchant's credentials: %v", err)
	}
	credsFile := filepath.Join(t.TempDir(), "creds.json")
	os.WriteFile(credsFile, []byte(`{"apiKey": "sandbox-key"}`), 0o600)
	if line, err := admin(t, "payments", "merchants", "set-credentials", "--data", data, "--credentials-file", credsFile, merchant); err != nil || line != merchant+" configured" {
		t.Fatalf("set-credentials: %q %v", line, err)
	}
	offer, err := admin(t, offerArgs...)
	if err != nil || !strings.HasPrefix(offer, "off_") {
		t.Fatalf("offers create: %q %v", offer, err)
	}
	if again, err := admin(t, offerArgs...); err != nil || again != offer {
		t.Fatalf("offers create again with its key: %q %v, want %s", again, err, offer)
	}
	if line, err := admin(t, "payments", "offers", "list", "--data", data); err != nil || line != "1 offers" {
		t.Fatalf("offers list: %q %v", line, err)
	}
	if line, err := admin(t, "payments", "merchants", "rewrap", "--data", data); err != nil || !strings.HasPrefix(line, "rewrapped 0 records") {
		t.Fatalf("rewrap under the same KEK: %q %v", line, err)
	}
	if line, err := admin(t, "payments", "clients", "revoke", "--data", data, creds[0]); err != nil || line != "revoked "+creds[0] {
		t.Fatalf("revoke: %q %v", line, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"payments", "clients", "create", "--data", data, "--return-url", "https://x.example/"}, "--name"},
		{[]string{"payments", "clients", "create", "--data", data, "--name", "x", "--return-url", "http://x.example/"}, "use https"},
		{[]string{"payments", "clients", "create", "--data", data, "--name", "x", "--deny", "everything"}, `--deny "everything": want one of`},
		{[]string{"payments", "clients", "create", "--data", data, "--name", "x", "--require-assertion"}, "--assertion-key"},
		{[]string{"payments", "clients", "create", "--data", data, "--name", "x", "--developer-key", "key_0000000000000000"}, "--developer-key"},
		{[]string{"payments", "clients", "revoke", "--data", data}, "payments clients revoke: ID is missing"},
		{[]string{"payments", "resource-types", "add", "--data", data, "Bad Name"}, "lower-case letters"},
		{[]string{"payments", "merchants", "create", "--data", data, "--name", "x", "--gateway", "paypal"}, `gateway "paypal": want one of`},
		{append(offerArgs[:len(offerArgs)-1:len(offerArgs)-1], "offer-2", "--currency", "XYZ"), `currency "XYZ"`},
		{append(append([]string{}, offerArgs[:len(offerArgs)-2]...), "--idempotency-key", "offer-1", "--quantity", "60"), "created another offer"},
		{[]string{"payments", "clients", "fly"}, `payments clients: unknown subcommand "fly"`},
	} {
		if _, err := admin(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args[1:3], err, c.want)
		}
	}
}
