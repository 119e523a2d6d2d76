//go:build linux

package main

// TestScaleOutTopology starts the scale-out shape exactly as compose.yaml
// describes it (each service's command and environment, its depends_on
// conditions and healthchecks), as separate OS processes on loopback against a
// real PostgreSQL and Redis, and drives it through the public edge.
// TestDeployFiles checks compose.yaml and the Dockerfile without any service.
//
// The processes are this test binary re-executed (TestMain calls run),
// so no separate build is needed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/vitolahq/vitola/internal/faults"
	"github.com/vitolahq/vitola/internal/trust"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

const (
	composePath    = "../../compose.yaml"
	dockerfilePath = "../../Dockerfile"
	// childEnv makes the re-executed test binary act as the vitola binary.
	childEnv = "VITOLA_TOPOLOGY_CHILD"
	// The services compose.yaml must define besides PostgreSQL and Redis.
	migrateService = "migrate"
	shimService    = "shim"
)

var appServices = []string{migrateService, "catalog", "users", "venues", "payments", "matching", "router", shimService}

// TestMain lets the topology test re-execute this test binary as the vitola
// binary: with childEnv set it runs run() with the arguments after "--" and
// exits, before any test.
func TestMain(m *testing.M) {
	if spec := os.Getenv(receiverEnv); spec != "" {
		parts := strings.SplitN(spec, "|", 3)
		if err := runReceiver(parts[0], parts[1], parts[2]); err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(childEnv) != "1" {
		os.Exit(m.Run())
	}
	args := os.Args
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	// A fault test names a point (internal/faults) where this process kills
	// itself, as a power cut would: no deferred work, no graceful shutdown.
	if point := os.Getenv("VITOLA_TEST_KILL_AT"); point != "" {
		faults.SetHook(func(name string) {
			if name == point {
				fmt.Fprintln(os.Stderr, "fault test: killed at", name)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, append([]string{"vitola"}, args...), os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vitola:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestScaleOutTopology(t *testing.T) {
	start := time.Now()
	dbURL, redisURL := topologyServices(t)
	cf := loadCompose(t)

	topo := &topology{
		t:           t,
		compose:     cf,
		ports:       map[string]int{},
		procs:       map[string]*proc{},
		vars:        map[string]string{"VITOLA_INTERNAL_KEY": randomHex(32)},
		redisPrefix: "vitola_topo_" + randomHex(6) + ":",
	}
	topo.allocPort = func() int { return loopbackPort(t) }
	topo.dbURL = createTestDatabase(t, dbURL)
	topo.redisURL = redisURL
	t.Cleanup(func() { deleteRedisPrefix(t, redisURL, topo.redisPrefix) })
	t.Cleanup(topo.killAll) // runs before the database is dropped

	// Start every service in depends_on order, waiting for each condition the way
	// compose does.
	for _, name := range topo.startOrder() {
		topo.waitDependencies(name)
		topo.start(name)
		t.Logf("%6s  started %s", time.Since(start).Round(time.Millisecond), name)
	}
	shimHealth := topo.healthURL(shimService)
	topo.waitHealth(shimService, shimHealth, http.StatusOK, 45*time.Second)
	t.Logf("topology healthy after %s", time.Since(start).Round(time.Millisecond))

	key := topo.createKey("topo")
	api := "http://" + topo.addr(shimService, 8080)
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(client.CloseIdleConnections)

	// A federated query: events and their venues from the venues subgraph, each
	// event's brand from the catalog.
	var events struct {
		Events struct {
			Edges []struct {
				Node struct {
					Name  string
					Venue struct{ Name string }
					Brand *struct{ Name, Country string }
				}
			}
		}
	}
	topo.graphql(client, api, key, `{ events(first: 5) { edges { node { name venue { name } brand { name country } } } } }`, &events)
	if len(events.Events.Edges) == 0 {
		topo.fatalf("events: no events came back; is the venues demo seeded?")
	}
	branded := 0
	for _, e := range events.Events.Edges {
		n := e.Node
		if n.Name == "" || n.Venue.Name == "" {
			topo.fatalf("events: an event without a name or venue name: %+v", n)
		}
		if n.Brand != nil {
			if n.Brand.Name == "" || n.Brand.Country == "" {
				topo.fatalf("events: brand %+v came back without the catalog's name and country", *n.Brand)
			}
			branded++
		}
	}
	if branded == 0 {
		topo.fatalf("events: none of %d events has a brand, so the catalog was never asked", len(events.Events.Edges))
	}

	search := `{ searchCigars(query: "padron", first: 3) { edges { node { name brand { name } } } } }`
	checkSearch := func() {
		var cigars struct {
			SearchCigars struct {
				Edges []struct {
					Node struct {
						Name  string
						Brand struct{ Name string }
					}
				}
			}
		}
		topo.graphql(client, api, key, search, &cigars)
		if len(cigars.SearchCigars.Edges) == 0 {
			topo.fatalf("searchCigars(padron): no cigars came back")
		}
		for _, e := range cigars.SearchCigars.Edges {
			if e.Node.Name == "" || !strings.HasPrefix(e.Node.Brand.Name, "Padr") {
				topo.fatalf("searchCigars(padron): got %+v, want named Padrón cigars", e.Node)
			}
		}
	}
	checkSearch()

	// A business feed: the shim runs one federated operation through the router,
	// joining sessions and users (users), cigars (catalog) and the venue (venues).
	feedURL := api + "/venues/" + venuesdemo.VenueID("The Ember Room") + "/sessions?limit=3"
	req, _ := http.NewRequest(http.MethodGet, feedURL, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		topo.fatalf("venue feed: %v", err)
	}
	var feed struct {
		Data []struct {
			User  struct{ DisplayName string }
			Cigar *struct{ Name, BrandName string }
			Venue struct{ Name string }
		}
		Meta struct{ Count, Limit int }
	}
	err = json.NewDecoder(res.Body).Decode(&feed)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(feed.Data) != 3 || feed.Meta.Count < 10 || feed.Meta.Limit != 3 {
		topo.fatalf("venue feed: %d %v %+v, want 3 of 10 or more sessions", res.StatusCode, err, feed)
	}
	for _, s := range feed.Data {
		if s.User.DisplayName == "" || s.Venue.Name != "The Ember Room" || s.Cigar == nil || s.Cigar.Name == "" || s.Cigar.BrandName == "" {
			topo.fatalf("venue feed: a session without its user, cigar or venue from the other subgraphs: %+v", s)
		}
	}

	// The public edge wants a developer key.
	if code, body := post(t, client, api+"/graphql", nil, `{"query":"{ __typename }"}`); code != http.StatusUnauthorized {
		topo.fatalf("shim /graphql without x-service-key: got %d %s, want 401", code, body)
	}

	// A subgraph called directly answers 401 without an internal token, and with
	// one signed by another key; with the shared key it answers.
	catalogGraphQL := "http://" + topo.addr("catalog", 8080) + "/graphql"
	entities := `{"query":"query($r: [_Any!]!) { _entities(representations: $r) { __typename } }","variables":{"r":[{"__typename":"Brand","id":"brd_x"}]}}`
	code, body := post(t, client, catalogGraphQL, nil, entities)
	if code != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
		topo.fatalf("catalog /graphql without an internal token: got %d %s, want 401 JSON", code, body)
	}
	code, body = post(t, client, catalogGraphQL, map[string]string{trust.Header: internalToken(t, randomHex(32))}, entities)
	if code != http.StatusUnauthorized {
		topo.fatalf("catalog /graphql with a token of another key: got %d %s, want 401", code, body)
	}
	code, body = post(t, client, catalogGraphQL, map[string]string{trust.Header: internalToken(t, topo.vars["VITOLA_INTERNAL_KEY"])}, entities)
	if code != http.StatusOK || !strings.Contains(body, `"_entities"`) {
		topo.fatalf("catalog /graphql with a valid internal token: got %d %s, want 200", code, body)
	}

	if !strings.Contains(topo.procs["catalog"].log.String(), `"seeded_demo":true`) {
		topo.fatalf("the catalog did not log seeding its demo data into the new database")
	}

	checkPaymentsReplicas(topo, client)
	checkLiveSessions(topo, api, key)

	// Stopping the catalog degrades the shim's /health/ready, naming the
	// catalog.
	topo.stop("catalog", 15*time.Second)
	health := topo.waitHealth(shimService, shimHealth, http.StatusServiceUnavailable, 15*time.Second)
	var hb struct {
		Components map[string]struct{ Status string }
	}
	if err := json.Unmarshal([]byte(health), &hb); err != nil || hb.Components["catalog"].Status != "unavailable" || hb.Components["router"].Status != "ok" {
		topo.fatalf("shim /health with the catalog stopped: got %s, want catalog unavailable and the router ok", health)
	}

	// Nothing lived in the catalog's memory: a new process on the same store
	// (not seeded again) serves the same answers.
	topo.start("catalog")
	topo.waitHealth(shimService, shimHealth, http.StatusOK, 30*time.Second)
	checkSearch()
	if strings.Contains(topo.procs["catalog"].log.String(), `"seeded_demo":true`) {
		topo.fatalf("the restarted catalog seeded its demo data again")
	}
	t.Logf("scale-out topology passed in %s", time.Since(start).Round(time.Millisecond))
}

// checkLiveSessions subscribes to a venue's sessions through the shim, over
// SSE and over WebSocket (the shim proxies both to the router, which streams
// from the users subgraph over the network), and starts sessions through the
// shim until one arrives on both, with its cigar and venue from the other
// subgraphs.
func checkLiveSessions(tp *topology, api, key string) {
	tp.t.Helper()
	cli := tp.admin("oauth", "clients", "create", "--name", "Live", "--redirect-uri", "http://127.0.0.1:9000/cb", "--public")
	tok := tp.admin("oauth", "token", "--public-url", api, "--user", "ana@vitola.example", "--client", cli, "--scope", "sessions:write")
	venue := venuesdemo.VenueID("The Ember Room")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := &http.Client{Transport: &http.Transport{Proxy: nil}} // no timeout: the context bounds it
	query := `subscription($venue: ID) { sessionStarted(venue: $venue) { note cigar { name } venue { name } } }`
	body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"venue": venue}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-service-key", key)
	res, err := stream.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		tp.fatalf("SSE subscription through the shim: %v %v", res, err)
	}
	defer res.Body.Close()
	sse := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, "sessionStarted") {
				sse <- data
			}
		}
	}()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(api, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		tp.fatalf("WebSocket through the shim: %v", err)
	}
	defer conn.CloseNow()
	for _, m := range []string{`{"type":"connection_init","payload":{"x-service-key":"` + key + `"}}`,
		`{"type":"subscribe","id":"1","payload":` + string(body) + `}`} {
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			tp.fatalf("WebSocket: %v", err)
		}
	}
	ws := make(chan string, 10)
	go func() {
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if strings.Contains(string(b), "sessionStarted") {
				ws <- string(b)
			}
		}
	}()
	var cigars struct{ Data []struct{ ID string } }
	req, _ = http.NewRequest(http.MethodGet, api+"/v1/cigars/search?q=padron&limit=1", nil)
	req.Header.Set("x-service-key", key)
	if res, err := stream.Do(req); err == nil {
		json.NewDecoder(res.Body).Decode(&cigars)
		res.Body.Close()
	}
	if len(cigars.Data) == 0 {
		tp.fatalf("no demo cigar to smoke")
	}
	start := `{"cigarId":"` + cigars.Data[0].ID + `","venueId":"` + venue + `","visibility":"public","note":"Live across processes"}`
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		code, out := post(tp.t, stream, api+"/v1/me/sessions", map[string]string{"x-service-key": key, "Authorization": "Bearer " + tok, "Content-Type": "application/json"}, start)
		if code != http.StatusCreated {
			tp.fatalf("POST /v1/me/sessions: %d %s", code, out)
		}
		// The first sessions may come before both streams reach the subgraph.
		wait := time.After(time.Second)
		for len(got) < 2 {
			select {
			case d := <-sse:
				got = append(got, d)
				sse = nil
				continue
			case d := <-ws:
				got = append(got, d)
				ws = nil
				continue
			case <-wait:
			}
			break
		}
	}
	for _, d := range got {
		if !strings.Contains(d, `"note":"Live across processes"`) || !strings.Contains(d, `"venue":{"name":"The Ember Room"}`) || !strings.Contains(d, `"cigar":{"name":"`) {
			tp.fatalf("a live session without its cigar or venue: %s", d)
		}
	}
	if len(got) < 2 {
		tp.fatalf("live sessions through the shim: got %d of 2 streams' events", len(got))
	}
}

// TestDeployFiles checks compose.yaml and the Dockerfile against what the binary
// and the topology test expect, without Docker or services.
func TestDeployFiles(t *testing.T) {
	cf := loadCompose(t)
	topo := &topology{t: t, compose: cf, ports: map[string]int{}, vars: map[string]string{"VITOLA_INTERNAL_KEY": randomHex(32)}}
	next := 20000
	topo.allocPort = func() int { next++; return next }
	topo.dbURL, topo.redisURL = "postgres://test/db", "redis://test:6379/0"

	if img := cf.Services["postgres"].Image; !strings.HasPrefix(img, "postgres:16") {
		t.Errorf("postgres image %q, want postgres:16", img)
	}
	if img := cf.Services["redis"].Image; !strings.HasPrefix(img, "redis:7") {
		t.Errorf("redis image %q, want redis:7", img)
	}
	image := cf.Services[migrateService].Image
	for _, name := range appServices {
		s := cf.Services[name]
		if s.Image != image || s.Build == nil {
			t.Errorf("%s: image %q build %v, want every Vitola service built from the one image %q", name, s.Image, s.Build, image)
		}
		if !strings.HasPrefix(s.Environment["VITOLA_INTERNAL_KEY"], "${VITOLA_INTERNAL_KEY:?") {
			t.Errorf("%s: VITOLA_INTERNAL_KEY must be required from the environment (${VITOLA_INTERNAL_KEY:?…})", name)
		}
		if _, err := interpolate(s.Environment["VITOLA_INTERNAL_KEY"], nil); err == nil {
			t.Errorf("%s: an unset VITOLA_INTERNAL_KEY should stop compose", name)
		}
		args, env := topo.resolve(name) // fails on a URL to an unknown service
		if name == migrateService {
			if !slices.Equal(args, []string{"migrate"}) || s.Restart != "no" {
				t.Errorf("migrate: command %v restart %q, want one-shot [migrate]", args, s.Restart)
			}
			continue
		}
		if len(args) < 3 || args[0] != "serve" || args[1] != "--component" || args[2] != name {
			t.Errorf("%s: command %v, want serve --component %s …", name, args, name)
		}
		if !slices.Contains(s.Command, "--addr") || !strings.Contains(strings.Join(s.Command, " "), "--addr 0.0.0.0:") {
			t.Errorf("%s: command %v, want --addr 0.0.0.0:PORT", name, s.Command)
		}
		if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), "/health/ready") {
			t.Errorf("%s: want a healthcheck against /health/ready (readiness)", name)
		}
		if _, err := parseServe(args[1:], envLookup(env)); err != nil {
			t.Errorf("%s: vitola serve rejects its compose settings: %v", name, err)
		}
		if s.DependsOn[migrateService].Condition != "service_completed_successfully" && name != shimService {
			t.Errorf("%s: want depends_on migrate: service_completed_successfully", name)
		}
	}
	shim := cf.Services[shimService]
	for _, p := range []string{"8080", "8081"} {
		if !slices.ContainsFunc(shim.Ports, func(s string) bool { return strings.HasSuffix(s, ":"+p) }) {
			t.Errorf("shim: port %s not published (ports %v)", p, shim.Ports)
		}
	}
	router, _ := parseServe(topo.mustArgs("router"))
	shimSettings, _ := parseServe(topo.mustArgs(shimService))
	for _, sg := range []string{"catalog", "users", "venues"} {
		if router == nil || router.SubgraphURLs[sg] == "" {
			t.Errorf("router: no subgraph URL for %s", sg)
		}
		if shimSettings == nil || shimSettings.SubgraphURLs[sg] == "" {
			t.Errorf("shim: no subgraph URL for %s (its /health/ready would not check it)", sg)
		}
	}
	topo.startOrder() // fails on a dependency cycle or an unknown service

	// The Dockerfile builds with the Go release go.mod names, statically, and runs
	// the binary as a non-root user.
	df, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	for _, want := range []string{
		"FROM golang:" + string(goVersion[1]) + " AS build",
		"CGO_ENABLED=0",
		"./cmd/vitola",
		`ENTRYPOINT ["vitola"]`,
	} {
		if !bytes.Contains(df, []byte(want)) {
			t.Errorf("Dockerfile: want %q", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^USER (\S+)`).FindSubmatch(df); m == nil || string(m[1]) == "root" || string(m[1]) == "0" {
		t.Errorf("Dockerfile: want a non-root USER")
	}
}

func (tp *topology) mustArgs(name string) ([]string, func(string) string) {
	args, env := tp.resolve(name)
	return args[1:], envLookup(env) // after "serve"
}

func envLookup(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// ---- compose.yaml --------------------------------------------------------

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Restart     string            `yaml:"restart"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func loadCompose(t *testing.T) *composeFile {
	t.Helper()
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, name := range append([]string{"postgres", "redis"}, appServices...) {
		if _, ok := cf.Services[name]; !ok {
			t.Fatalf("compose.yaml: no service %q", name)
		}
	}
	return &cf
}

// interpolate expands compose's ${NAME}, ${NAME:-default}, ${NAME-default},
// ${NAME:?error}, ${NAME?error}, $NAME and $$.
func interpolate(s string, vars map[string]string) (string, error) {
	var firstErr error
	out := interpRE.ReplaceAllStringFunc(s, func(m string) string {
		sm := interpRE.FindStringSubmatch(m)
		if sm[1] == "$" {
			return "$"
		}
		name, op, arg := sm[2], sm[3], sm[4]
		if name == "" {
			return vars[sm[5]]
		}
		v, set := vars[name]
		unset := !set || (strings.HasPrefix(op, ":") && v == "")
		switch {
		case unset && strings.HasSuffix(op, "-"):
			return arg
		case unset && strings.HasSuffix(op, "?") && firstErr == nil:
			firstErr = fmt.Errorf("%s: %s", name, arg)
		}
		return v
	})
	return out, firstErr
}

var interpRE = regexp.MustCompile(`\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?])?([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)

// ---- the topology ----------------------------------------------------------

type topology struct {
	t         *testing.T
	compose   *composeFile
	vars      map[string]string // compose's own environment (interpolation)
	allocPort func() int
	ports     map[string]int // "service:container port" -> loopback port
	procs     map[string]*proc
	dbURL     string
	redisURL  string

	redisPrefix string
}

// addr is where the test runs what compose runs as service:port.
func (tp *topology) addr(service string, port int) string {
	k := service + ":" + strconv.Itoa(port)
	if _, ok := tp.ports[k]; !ok {
		tp.ports[k] = tp.allocPort()
	}
	return "127.0.0.1:" + strconv.Itoa(tp.ports[k])
}

var (
	serviceURLRE = regexp.MustCompile(`(https?://)([A-Za-z0-9_.-]+):(\d+)`)
	listenAddrRE = regexp.MustCompile(`^0\.0\.0\.0:(\d+)$`)
)

// rewrite maps compose's network onto loopback: http://SERVICE:PORT to that
// service's port here, a listen address 0.0.0.0:PORT and this service's own
// 127.0.0.1/localhost URLs to its port here.
func (tp *topology) rewrite(service, s string) string {
	if m := listenAddrRE.FindStringSubmatch(s); m != nil {
		p, _ := strconv.Atoi(m[1])
		return tp.addr(service, p)
	}
	return serviceURLRE.ReplaceAllStringFunc(s, func(u string) string {
		m := serviceURLRE.FindStringSubmatch(u)
		host, p := m[2], m[3]
		port, _ := strconv.Atoi(p)
		switch {
		case host == "127.0.0.1" || host == "localhost":
			host = service
		case tp.compose.Services[host].Image == "" && tp.compose.Services[host].Build == nil:
			tp.t.Fatalf("compose.yaml: %s refers to %s, which is no service", service, u)
		}
		return m[1] + tp.addr(host, port)
	})
}

// resolve returns a service's vitola arguments and environment, as compose
// would run them, mapped onto the test's database, Redis and loopback ports.
func (tp *topology) resolve(name string) (args, env []string) {
	tp.t.Helper()
	s := tp.compose.Services[name]
	for _, a := range s.Command {
		v, err := interpolate(a, tp.vars)
		if err != nil {
			tp.t.Fatalf("compose.yaml %s command: %v", name, err)
		}
		args = append(args, tp.rewrite(name, v))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
		v, err := interpolate(s.Environment[k], tp.vars)
		if err != nil {
			tp.t.Fatalf("compose.yaml %s environment: %v", name, err)
		}
		switch k {
		case "DATABASE_URL":
			if !strings.Contains(v, "@postgres:") {
				tp.t.Fatalf("compose.yaml %s: DATABASE_URL %q is not the postgres service", name, v)
			}
			v = tp.dbURL
		case "REDIS_URL":
			if !strings.HasPrefix(v, "redis://redis:") {
				tp.t.Fatalf("compose.yaml %s: REDIS_URL %q is not the redis service", name, v)
			}
			v = tp.redisURL
		default:
			v = tp.rewrite(name, v)
		}
		env = append(env, k+"="+v)
	}
	return args, append(env, "VITOLA_REDIS_PREFIX="+tp.redisPrefix)
}

// healthURL is the URL of a service's compose healthcheck, here.
func (tp *topology) healthURL(name string) string {
	tp.t.Helper()
	if hc := tp.compose.Services[name].Healthcheck; hc != nil {
		for _, a := range hc.Test {
			if strings.Contains(a, "://") {
				return tp.rewrite(name, a)
			}
		}
	}
	tp.t.Fatalf("compose.yaml: %s has no HTTP healthcheck", name)
	return ""
}

// startOrder orders the Vitola services so each comes after what it depends on.
func (tp *topology) startOrder() []string {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string, []string)
	visit = func(name string, path []string) {
		switch state[name] {
		case 1:
			tp.t.Fatalf("compose.yaml: depends_on cycle %v", append(path, name))
		case 2:
			return
		}
		state[name] = 1
		for _, dep := range slices.Sorted(maps.Keys(tp.compose.Services[name].DependsOn)) {
			if _, ok := tp.compose.Services[dep]; !ok {
				tp.t.Fatalf("compose.yaml: %s depends on unknown service %s", name, dep)
			}
			if slices.Contains(appServices, dep) {
				visit(dep, append(path, name))
			}
		}
		state[name] = 2
		order = append(order, name)
	}
	for _, name := range appServices {
		visit(name, nil)
	}
	return order
}

// waitDependencies waits for each depends_on condition of a service on another
// Vitola service (PostgreSQL and Redis are already up).
func (tp *topology) waitDependencies(name string) {
	for _, dep := range slices.Sorted(maps.Keys(tp.compose.Services[name].DependsOn)) {
		if !slices.Contains(appServices, dep) {
			continue
		}
		switch cond := tp.compose.Services[name].DependsOn[dep].Condition; cond {
		case "service_completed_successfully":
			p := tp.procs[dep]
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				tp.fatalf("%s did not finish within 30s (%s waits for it)", dep, name)
			}
			if p.err != nil {
				tp.fatalf("%s failed: %v (%s waits for it to succeed)", dep, p.err, name)
			}
		case "service_healthy":
			tp.waitHealth(dep, tp.healthURL(dep), http.StatusOK, 45*time.Second)
		case "service_started", "":
		default:
			tp.t.Fatalf("compose.yaml: %s depends on %s with unknown condition %q", name, dep, cond)
		}
	}
}

func (tp *topology) start(name string) {
	args, env := tp.resolve(name)
	tp.procs[name] = startProc(tp.t, name, args, env, nil)
}

// startReplica starts another replica of a service under a name of its own,
// as --scale does: the same arguments and environment, its own ports, and
// (subgraphs) its subgraph URLs pointed at other replicas. It returns the
// replica's health URL.
func (tp *topology) startReplica(service, replica string, subgraphs map[string]string) string {
	args, env := tp.resolve(service)
	for i := range args {
		for _, port := range []int{8080, 8081} {
			args[i] = strings.ReplaceAll(args[i], tp.addr(service, port), tp.addr(replica, port))
		}
	}
	for i := range env {
		for from, to := range subgraphs {
			env[i] = strings.ReplaceAll(env[i], tp.addr(from, 8080), tp.addr(to, 8080))
		}
	}
	tp.procs[replica] = startProc(tp.t, replica, args, env, nil)
	health := strings.ReplaceAll(tp.healthURL(service), tp.addr(service, 8080), tp.addr(replica, 8080))
	tp.waitHealth(replica, health, http.StatusOK, 45*time.Second)
	return health
}

// admin runs a vitola admin command against the topology's database and
// returns the last line of its output.
func (tp *topology) admin(args ...string) string {
	tp.t.Helper()
	var stdout bytes.Buffer
	p := startProc(tp.t, args[0], append(args, "--database-url", tp.dbURL), []string{"VITOLA_INTERNAL_KEY=" + tp.vars["VITOLA_INTERNAL_KEY"]}, &stdout)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		tp.fatalf("vitola %s did not finish within 30s", strings.Join(args, " "))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if p.err != nil {
		tp.fatalf("vitola %s: %v; output: %s %s", strings.Join(args[:2], " "), p.err, stdout.String(), p.log.String())
	}
	return lines[len(lines)-1]
}

// checkPaymentsReplicas runs the payments API on two shim replicas, each over
// its own payments subgraph replica: a session created through one is
// replayed (its Idempotency-Key is shared) and read through the other.
func checkPaymentsReplicas(tp *topology, client *http.Client) {
	tp.t.Helper()
	tp.startReplica("payments", "payments-2", nil)
	tp.startReplica(shimService, "shim-2", map[string]string{"payments": "payments-2"})
	creds := strings.Fields(tp.admin("payments", "clients", "create", "--name", "topo-shop", "--return-url", "https://shop.example/paid"))
	if len(creds) != 3 || !strings.HasPrefix(creds[0], "pcl_") || !strings.HasPrefix(creds[1], "vps_") || !strings.HasPrefix(creds[2], "whsec_") {
		tp.fatalf("payments clients create printed %q, want its ID, secret and signing secret", creds)
	}
	origins := []string{"http://" + tp.addr(shimService, 8081), "http://" + tp.addr("shim-2", 8081)}
	call := func(origin, method, path, body string, headers map[string]string) (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(method, origin+"/api/v1"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+creds[1])
		req.Header.Set("X-Service-Client-Id", creds[0])
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			tp.fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		var out struct {
			Data  json.RawMessage
			Error string
		}
		json.NewDecoder(res.Body).Decode(&out)
		var data map[string]any
		json.Unmarshal(out.Data, &data)
		if res.StatusCode >= 300 {
			tp.fatalf("%s %s on %s: %d %s", method, path, origin, res.StatusCode, out.Error)
		}
		return res.StatusCode, data, res.Header
	}
	_, account, _ := call(origins[0], "POST", "/billing-accounts/resolve", `{"accountReference": "customer-1"}`, nil)
	req, _ := http.NewRequest("GET", origins[1]+"/api/v1/offers?resourceType=ai_credits", nil)
	req.Header.Set("Authorization", "Bearer "+creds[1])
	req.Header.Set("X-Service-Client-Id", creds[0])
	res, err := client.Do(req)
	if err != nil {
		tp.fatalf("offers: %v", err)
	}
	var offers struct{ Data []struct{ ID string } }
	json.NewDecoder(res.Body).Decode(&offers)
	res.Body.Close()
	if len(offers.Data) == 0 {
		tp.fatalf("offers: none on the second replica (is the payments demo seeded?)")
	}
	body := fmt.Sprintf(`{"billingAccountId": %q, "offerId": %q, "returnUrl": "https://shop.example/paid"}`, account["id"], offers.Data[0].ID)
	_, created, _ := call(origins[0], "POST", "/payment-sessions", body, map[string]string{"Idempotency-Key": "topo-1"})
	code, replayed, h := call(origins[1], "POST", "/payment-sessions", body, map[string]string{"Idempotency-Key": "topo-1"})
	if code != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || replayed["id"] != created["id"] {
		tp.fatalf("the session replayed on the other replica: %d %v %v, want %v", code, h, replayed["id"], created["id"])
	}
	_, status, _ := call(origins[1], "GET", "/payment-sessions/"+created["id"].(string)+"/status", "", nil)
	if status["state"] != "open" || status["billingAccountId"] != account["id"] {
		tp.fatalf("status on the other replica: %v", status)
	}
}

// stop ends a service with SIGTERM, as docker compose stop does.
func (tp *topology) stop(name string, grace time.Duration) {
	p := tp.procs[name]
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			tp.fatalf("%s did not shut down cleanly on SIGTERM: %v", name, p.err)
		}
	case <-time.After(grace):
		tp.fatalf("%s still running %s after SIGTERM", name, grace)
	}
}

func (tp *topology) killAll() {
	for _, p := range tp.procs {
		p.kill()
	}
}

// createKey runs `vitola keys create` against the topology's database and returns
// the plain key (the last line of its output).
func (tp *topology) createKey(name string) string {
	var stdout bytes.Buffer
	p := startProc(tp.t, "keys", []string{"keys", "create", "--name", name, "--database-url", tp.dbURL}, nil, &stdout)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		tp.fatalf("vitola keys create did not finish within 30s")
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if p.err != nil || !strings.HasPrefix(lines[len(lines)-1], "vk_") {
		tp.fatalf("vitola keys create: %v; output: %s %s", p.err, stdout.String(), p.log.String())
	}
	return lines[len(lines)-1]
}

// waitHealth polls url until it answers want, failing with every process's last
// log lines after timeout. It returns the last body.
func (tp *topology) waitHealth(name, url string, want int, timeout time.Duration) string {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for {
		if p := tp.procs[name]; p != nil && want == http.StatusOK && p.exited() {
			tp.fatalf("%s exited (%v) while waiting for its /health", name, p.err)
		}
		res, err := client.Get(url)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			last = fmt.Sprintf("%d %s", res.StatusCode, bytes.TrimSpace(b))
			if res.StatusCode == want {
				return string(b)
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			tp.fatalf("%s %s did not answer %d within %s; last: %s", name, url, want, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// graphql posts query to the shim with the developer key and decodes data into
// out, failing on any error.
func (tp *topology) graphql(client *http.Client, api, key, query string, out any) {
	tp.t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	code, resBody := post(tp.t, client, api+"/graphql", map[string]string{"x-service-key": key}, string(body))
	var res struct {
		Data   json.RawMessage
		Errors []json.RawMessage
	}
	if err := json.Unmarshal([]byte(resBody), &res); err != nil || code != http.StatusOK || len(res.Errors) > 0 || len(res.Data) == 0 {
		tp.fatalf("%s: got %d %s", query, code, resBody)
	}
	if err := json.Unmarshal(res.Data, out); err != nil {
		tp.fatalf("%s: decode %s: %v", query, res.Data, err)
	}
}

// fatalf fails the test with the last log lines of every process.
func (tp *topology) fatalf(format string, args ...any) {
	tp.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, format, args...)
	for _, name := range slices.Sorted(maps.Keys(tp.procs)) {
		p := tp.procs[name]
		state := "running"
		if p.exited() {
			state = fmt.Sprintf("exited: %v", p.err)
		}
		fmt.Fprintf(&b, "\n--- %s (%s) %s, last log lines:\n%s", name, strings.Join(p.cmd.Args[3:], " "), state, p.log.tail(15))
	}
	tp.t.Fatal(b.String())
}

// ---- processes -------------------------------------------------------------

type proc struct {
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{}
	err  error
}

// startProc runs `vitola args…` (this test binary as a child) in a process group
// of its own that dies with the test. stdout, when given, gets standard output
// apart from the log.
func startProc(t *testing.T, name string, args, env []string, stdout io.Writer) *proc {
	t.Helper()
	return startBinary(t, name, os.Args[0], append([]string{"--"}, args...), env, stdout)
}

// startBinary is startProc for any binary (a vitola built by the test).
func startBinary(t *testing.T, name, bin string, args, env []string, stdout io.Writer) *proc {
	t.Helper()
	p := &proc{log: &logBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(childEnviron(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process group and waits (bounded) for the process.
func (p *proc) kill() {
	if p.exited() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// childEnviron is the test's environment without anything that would configure
// vitola behind the topology's back.
func childEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "VITOLA_") || k == "DATABASE_URL" || k == "REDIS_URL" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, childEnv+"=1")
}

// logBuffer keeps a process's output, bounded.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const maxLog = 1 << 20

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	if len(l.buf) > maxLog {
		l.buf = slices.Clone(l.buf[len(l.buf)-maxLog/2:])
	}
	return len(b), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func (l *logBuffer) tail(n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(nil, maxLog)
	for sc.Scan() {
		lines = append(lines, "    "+sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "    (no output)"
	}
	return strings.Join(lines, "\n")
}

// ---- PostgreSQL, Redis and HTTP helpers -------------------------------------

// topologyServices returns the PostgreSQL and Redis URLs to run against, skipping
// the test when they are not configured or not reachable, unless services are
// required (VITOLA_TEST_REQUIRE_SERVICES=1).
func topologyServices(t *testing.T) (dbURL, redisURL string) {
	t.Helper()
	require := os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if require {
			t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1: " + msg)
		}
		t.Skip("missing PostgreSQL or Redis: the scale-out topology test needs both; " + msg)
	}
	dbURL, redisURL = os.Getenv("VITOLA_TEST_DATABASE_URL"), os.Getenv("VITOLA_TEST_REDIS_URL")
	if dbURL == "" || redisURL == "" {
		unavailable("set VITOLA_TEST_DATABASE_URL=postgres://… and VITOLA_TEST_REDIS_URL=redis://… to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		unavailable("PostgreSQL at VITOLA_TEST_DATABASE_URL is unreachable: %v", err)
	}
	conn.Close(ctx)
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		unavailable("VITOLA_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		unavailable("Redis at VITOLA_TEST_REDIS_URL is unreachable: %v", err)
	}
	return dbURL, redisURL
}

// createTestDatabase creates a database of the test's own next to the one adminURL
// names, dropped (connections and all) when the test ends, and returns its URL.
func createTestDatabase(t *testing.T, adminURL string) string {
	t.Helper()
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("VITOLA_TEST_DATABASE_URL must be a postgres:// URL")
	}
	// The name carries its creation time, so that a later run can drop what a
	// killed run (whose cleanup never ran) left behind.
	name := fmt.Sprintf("vitola_topo_%d_%s", time.Now().Unix(), randomHex(4))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	dropStaleDatabases(ctx, t, conn)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create the test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Errorf("drop the test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop the test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// dropStaleDatabases drops test databases more than an hour old.
func dropStaleDatabases(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'vitola\_topo\_%'`)
	if err != nil {
		t.Logf("list stale test databases: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Logf("list stale test databases: %v", err)
		return
	}
	for _, n := range names {
		created, _, _ := strings.Cut(strings.TrimPrefix(n, "vitola_topo_"), "_")
		if sec, err := strconv.ParseInt(created, 10, 64); err == nil && time.Since(time.Unix(sec, 0)) > time.Hour {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("drop stale test database %s: %v", n, err)
			}
		}
	}
}

func deleteRedisPrefix(t *testing.T, redisURL, prefix string) {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("delete test keys under %s: %v", prefix, err)
	}
}

func post(t *testing.T, client *http.Client, u string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("POST %s: %v", u, err)
	}
	return res.StatusCode, string(b)
}

func internalToken(t *testing.T, key string) string {
	t.Helper()
	iss, err := trust.NewIssuer([]byte(key), "router")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Token(trust.Identity{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
