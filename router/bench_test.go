//go:build unix

package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/schema"
)

// The router-overhead benchmark (unix only: it reads the process's CPU time with
// getrusage): the same single-subgraph operation sent over
// loopback HTTP once straight to the catalog subgraph (with a valid internal
// token) and once to the public API (developer key, router, limits, engine,
// internal-token transport, subgraph). Throughput of the second as a share of the
// first is the router's efficiency; the goal is at least 60%.
//
//	go test ./router -bench RouterOverhead -run '^$' -benchtime 3s
//	VITOLA_BENCH=1 go test ./router -run TestRouterOverheadRatio -v -count=1
//
// "router" is the one-process shape (the router reaches the subgraph through the
// in-process transport); "router-http" is the scale-out shape (the router calls
// the subgraph's own server over loopback HTTP), the one comparable with a
// router such as Cosmo's in front of a networked subgraph.

// benchEnv is one platform with its public API, the catalog subgraph and a
// scale-out router, each behind a loopback HTTP server.
type benchEnv struct {
	api, catalog, routerHTTP *httptest.Server
	serviceKey               string
	internalToken            string
	client                   *http.Client
	queries                  []benchQuery
	// What another router over the same subgraphs needs (the federation
	// benchmark builds one per tuning).
	subgraphURLs map[string]string
	issuer       *trust.Issuer
	keys         router.KeyChecker

	// failure is the first error of a run: testing.Benchmark drops b.Error's
	// message and returns an empty result.
	failure atomic.Pointer[error]
}

func (e *benchEnv) fail(b *testing.B, err error) {
	e.failure.CompareAndSwap(nil, &err)
	b.Error(err)
}

// benchQuery is one operation in benchVariants spellings that do the same work
// but differ in their subgraph input: each client goroutine sends its own, so
// that no two requests in flight are identical and the engine's subgraph request
// deduplication (on by default in graphql-go-tools, not switchable through
// engine.Execute) never merges them. The goal compares with routers measured with
// deduplication off.
type benchQuery struct {
	name   string
	bodies [][]byte
	// check validates the data of a response to bodies[i] (errors are refused
	// before).
	check func(i int, data map[string]any) error
}

// benchVariants is how many distinct spellings of each query there are: more
// than the client goroutines (benchParallelism × GOMAXPROCS).
const benchVariants = 32

// benchParallelism multiplies GOMAXPROCS for the client goroutines of
// RunParallel: the servers share the CPUs, so a few requests in flight per core
// keep them busy while the client waits on the loopback socket.
// VITOLA_BENCH_PARALLELISM overrides it.
var benchParallelism = func() int {
	if n, err := strconv.Atoi(os.Getenv("VITOLA_BENCH_PARALLELISM")); err == nil && n > 0 {
		return n
	}
	return 4
}()

func newBenchEnv(tb testing.TB) *benchEnv {
	tb.Helper()
	ctx := context.Background()
	key := bytes.Repeat([]byte("k"), 32)
	p, err := platform.Open(ctx, platform.Options{
		Store:       sqldb.Config{DataDir: tb.TempDir()},
		InternalKey: key,
		Demo:        true,
		Logger:      zerolog.Nop(),
	})
	if err != nil {
		tb.Fatalf("open platform: %v", err)
	}
	tb.Cleanup(p.Close)
	_, plain, err := p.Keys.CreateKey(ctx, "bench", nil)
	if err != nil {
		tb.Fatalf("create key: %v", err)
	}
	issuer, err := trust.NewIssuer(key, "router")
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := issuer.Token(trust.Identity{})
	if err != nil {
		tb.Fatal(err)
	}

	e := &benchEnv{serviceKey: plain, internalToken: tok, client: newBenchClient(), issuer: issuer, keys: p.Keys}
	e.api = httptest.NewServer(p.API)
	tb.Cleanup(e.api.Close)
	// Every subgraph gets its own server, for the scale-out router.
	subgraphURLs := map[string]string{}
	for _, name := range schema.Subgraphs {
		srv := httptest.NewServer(p.Subgraphs[name])
		tb.Cleanup(srv.Close)
		subgraphURLs[name] = srv.URL + "/graphql"
		if name == schema.Catalog {
			e.catalog = srv
		}
	}
	e.subgraphURLs = subgraphURLs
	composed, err := router.LoadComposed(schema.RouterConfig, subgraphURLs)
	if err != nil {
		tb.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	tb.Cleanup(cancel)
	subClient := &http.Client{Timeout: 30 * time.Second, Transport: &trust.Transport{
		Base: newBenchTransport(), Issuer: issuer, Hosts: platform.SignedHosts(subgraphURLs),
	}}
	rt, err := router.New(rctx, router.Config{Composed: composed, Client: subClient, Keys: p.Keys, Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	e.routerHTTP = httptest.NewServer(rt)
	tb.Cleanup(e.routerHTTP.Close)

	// Real brand IDs, found through the subgraph itself.
	data, err := e.do(e.directRequest(gqlBody(fmt.Sprintf(`{ brands(first: %d) { edges { node { id name } } } }`, benchVariants))))
	if err != nil {
		tb.Fatalf("find brands: %v", err)
	}
	edges, _ := dig(data, "brands", "edges").([]any)
	if len(edges) < benchVariants {
		tb.Fatalf("the demo catalog has %d brands, want %d", len(edges), benchVariants)
	}
	var brandIDs []string
	for _, edge := range edges {
		id, _ := dig(edge, "node", "id").(string)
		if id == "" {
			tb.Fatalf("brand without an id: %v", edge)
		}
		brandIDs = append(brandIDs, id)
	}
	brand := benchQuery{name: "brand", check: func(i int, data map[string]any) error {
		if got, _ := dig(data, "brand", "id").(string); got != brandIDs[i] {
			return fmt.Errorf("brand.id = %q, want %q", got, brandIDs[i])
		}
		return nil
	}}
	// The search folds case, so "padron", "Padron", "pAdron"... find the same
	// cigars with the same work.
	var searchIDs []string // what every spelling, on every side, must find
	search := benchQuery{name: "search", check: func(_ int, data map[string]any) error {
		edges, _ := dig(data, "searchCigars", "edges").([]any)
		var ids []string
		for _, edge := range edges {
			id, _ := dig(edge, "node", "id").(string)
			ids = append(ids, id)
		}
		if searchIDs == nil && len(ids) == 5 {
			searchIDs = ids
		}
		if !slices.Equal(ids, searchIDs) {
			return fmt.Errorf("searchCigars found %v, want the 5 cigars %v", ids, searchIDs)
		}
		return nil
	}}
	for i := range benchVariants {
		brand.bodies = append(brand.bodies, gqlBody(fmt.Sprintf(`{ brand(id: %q) { id name country } }`, brandIDs[i])))
		term := []byte("padron")
		for bit := range term {
			if i&(1<<bit) != 0 {
				term[bit] -= 'a' - 'A'
			}
		}
		search.bodies = append(search.bodies, gqlBody(fmt.Sprintf(`{ searchCigars(query: %q, first: 5) { edges { node { id name } } } }`, term)))
	}
	e.queries = []benchQuery{brand, search}
	// Each side must answer each spelling of each query correctly before
	// anything is timed.
	for _, q := range e.queries {
		for _, side := range benchSides {
			for i, body := range q.bodies {
				data, err := e.do(side.request(e, body))
				if err == nil {
					err = q.check(i, data)
				}
				if err != nil {
					tb.Fatalf("%s/%s #%d: %v", q.name, side.name, i, err)
				}
			}
		}
	}
	return e
}

// newBenchTransport is the client transport of every side: keep-alive on, idle
// connections for every goroutine, no compression.
func newBenchTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

func newBenchClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: newBenchTransport()}
}

type benchSide struct {
	name    string
	request func(e *benchEnv, body []byte) *http.Request
}

var benchSides = []benchSide{
	{"direct", (*benchEnv).directRequest},
	{"router", (*benchEnv).routerRequest},
	{"router-http", (*benchEnv).routerHTTPRequest},
}

func (e *benchEnv) directRequest(body []byte) *http.Request {
	r := newPost(e.catalog.URL+"/graphql", body)
	r.Header.Set(trust.Header, e.internalToken)
	return r
}

func (e *benchEnv) routerRequest(body []byte) *http.Request {
	r := newPost(e.api.URL+"/graphql", body)
	r.Header.Set(access.Header, e.serviceKey)
	return r
}

func (e *benchEnv) routerHTTPRequest(body []byte) *http.Request {
	r := newPost(e.routerHTTP.URL+"/graphql", body)
	r.Header.Set(access.Header, e.serviceKey)
	return r
}

func newPost(url string, body []byte) *http.Request {
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", router.MediaGraphQLResponse) // refusals answer 400
	return r
}

func gqlBody(query string) []byte {
	b, err := json.Marshal(map[string]any{"query": query})
	if err != nil {
		panic(err)
	}
	return b
}

// do sends r and returns the data of a 200 response without errors.
func (e *benchEnv) do(r *http.Request) (map[string]any, error) {
	res, err := e.client.Do(r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, raw)
	}
	var out struct {
		Data   map[string]any  `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", raw, err)
	}
	if len(out.Errors) > 0 && string(out.Errors) != "null" {
		return nil, fmt.Errorf("errors: %s", out.Errors)
	}
	if out.Data == nil {
		return nil, fmt.Errorf("no data: %s", raw)
	}
	return out.Data, nil
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// run is one side's benchmark body. Each goroutine sends its own spelling of the
// query; its request is built once and its body rewound for each call.
//
// Besides ns/op it reports cpu-ns/op: the process's CPU time (user and system:
// client, servers, GC alike) per request. On a shared machine it moves much
// less than wall time, and with the CPUs saturated throughput follows it.
func (e *benchEnv) run(b *testing.B, side benchSide, q benchQuery) {
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	var next atomic.Int64
	b.ResetTimer()
	cpu0 := processCPU()
	defer func() {
		b.StopTimer()
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		body := q.bodies[int(next.Add(1)-1)%len(q.bodies)]
		rd := bytes.NewReader(body)
		r := side.request(e, body)
		r.GetBody = nil
		for pb.Next() {
			rd.Reset(body)
			r.Body = io.NopCloser(rd)
			res, err := e.client.Do(r)
			if err != nil {
				e.fail(b, err)
				return
			}
			raw, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				e.fail(b, fmt.Errorf("status %d, read error %v: %.300s", res.StatusCode, err, raw))
				return
			}
		}
	})
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkRouterOverhead(b *testing.B) {
	e := newBenchEnv(b)
	for _, q := range e.queries {
		b.Run(q.name, func(b *testing.B) {
			for _, side := range benchSides {
				b.Run(side.name, func(b *testing.B) { e.run(b, side, q) })
			}
		})
	}
}

// TestRouterOverheadRatio measures both sides of each query in the same run,
// alternating rounds so that drift on a shared machine hits both alike, and logs
// the router's throughput as a share of the direct call. It asserts nothing about
// timing: it is the measurement, not a gate.
func TestRouterOverheadRatio(t *testing.T) {
	// VITOLA_BENCH_ROUNDS sets the rounds, VITOLA_BENCH_QUERY picks one query
	// (brand or search), -benchtime sets each round's length.
	rounds := 7
	if os.Getenv("VITOLA_BENCH") != "1" {
		// Without VITOLA_BENCH=1 (as in CI) one short round only proves the
		// harness works: its figures mean little on a busy machine.
		rounds = 1
		flag.Set("test.benchtime", "50ms")
	}
	if n, err := strconv.Atoi(os.Getenv("VITOLA_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	e := newBenchEnv(t)
	for _, q := range e.queries {
		if only := os.Getenv("VITOLA_BENCH_QUERY"); only != "" && only != q.name {
			continue
		}
		// Warm both sides (connections, caches, the engine's plan cache).
		for _, side := range benchSides {
			for i := range 200 {
				if _, err := e.do(side.request(e, q.bodies[i%len(q.bodies)])); err != nil {
					t.Fatalf("%s/%s: %v", q.name, side.name, err)
				}
			}
		}
		results := map[string][]testing.BenchmarkResult{}
		// ratios holds each round's direct ns/op over the side's: sides measured
		// back to back share the machine's load of the moment.
		ratios, cpuRatios := map[string][]float64{}, map[string][]float64{}
		for round := range rounds {
			order := benchSides
			if round%2 == 1 {
				order = slices.Clone(benchSides)
				slices.Reverse(order)
			}
			for _, side := range order {
				r := testing.Benchmark(func(b *testing.B) { e.run(b, side, q) })
				if r.N == 0 {
					var err error
					if p := e.failure.Load(); p != nil {
						err = *p
					}
					t.Fatalf("%s/%s: the benchmark failed: %v", q.name, side.name, err)
				}
				results[side.name] = append(results[side.name], r)
				t.Logf("%s round %d %-12s %s", q.name, round+1, side.name, r.String()+" "+r.MemString())
			}
			direct := results["direct"][round]
			for _, side := range benchSides[1:] {
				r := results[side.name][round]
				ratios[side.name] = append(ratios[side.name], (float64(direct.T)/float64(direct.N))/(float64(r.T)/float64(r.N)))
				cpuRatios[side.name] = append(cpuRatios[side.name], direct.Extra["cpu-ns/op"]/r.Extra["cpu-ns/op"])
			}
		}
		direct := summarize(results["direct"])
		for _, side := range benchSides {
			s := summarize(results[side.name])
			line := fmt.Sprintf("%s: %-12s median %7.0f ns/op %6.0f req/s (best %7.0f ns/op %6.0f req/s) %7.0f cpu-ns/op %5d allocs/op %7d B/op",
				q.name, side.name, s.nsPerOp, 1e9/s.nsPerOp, s.bestNsPerOp, 1e9/s.bestNsPerOp, s.cpuNsPerOp, s.allocs, s.bytes)
			if side.name != "direct" {
				rs := slices.Sorted(slices.Values(ratios[side.name]))
				cs := slices.Sorted(slices.Values(cpuRatios[side.name]))
				line += fmt.Sprintf("\n    throughput as a share of direct: %.1f%% (median of per-round ratios; range %.1f%%–%.1f%%; medians %.1f%%; best rounds %.1f%%)"+
					"\n    CPU per request, direct's as a share of this side's: %.1f%% (median of per-round ratios; range %.1f%%–%.1f%%)",
					100*rs[len(rs)/2], 100*rs[0], 100*rs[len(rs)-1], 100*direct.nsPerOp/s.nsPerOp, 100*direct.bestNsPerOp/s.bestNsPerOp,
					100*cs[len(cs)/2], 100*cs[0], 100*cs[len(cs)-1])
			}
			t.Log(line)
		}
	}
}

type benchSummary struct {
	nsPerOp, bestNsPerOp, cpuNsPerOp float64
	allocs, bytes                    int64
}

// summarize takes the median round's ns/op (a shared machine's bursts of noise
// land on single rounds), the best round's, and allocations over all rounds.
func summarize(rs []testing.BenchmarkResult) benchSummary {
	var n, allocs, bytes uint64
	var ns, cpu []float64
	for _, r := range rs {
		ns = append(ns, float64(r.T)/float64(r.N))
		cpu = append(cpu, r.Extra["cpu-ns/op"])
		n += uint64(r.N)
		allocs += r.MemAllocs
		bytes += r.MemBytes
	}
	slices.Sort(ns)
	slices.Sort(cpu)
	return benchSummary{nsPerOp: ns[len(ns)/2], bestNsPerOp: ns[0], cpuNsPerOp: cpu[len(cpu)/2], allocs: int64(allocs / n), bytes: int64(bytes / n)}
}
