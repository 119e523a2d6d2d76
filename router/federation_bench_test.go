//go:build unix

package router_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/schema"
)

// TestRouterBenchmark is `make bench-router`: the router in front of real
// subgraph servers on loopback, measured against calling a subgraph directly
// in the same run, with inbound deduplication and single-flight on and off.
//
// First graphql-go-tools' own federation test subgraphs (accounts, products,
// reviews) under the composition wgc made for them, the setting of issue 28's
// Cosmo figures: 32 connections sending `{ topProducts { upc name price
// reviews { body } } }` (the join) or `{ topProducts { upc name price } }`
// (products only), the direct call being the products subgraph answering the
// latter. Then Vitola's own graph: a search joined with each cigar's brand,
// against the catalog subgraph answering it directly.
//
// Every connection sends the same query, as many clients asking for one
// popular query do: that is what deduplication is for. It logs medians over
// rounds (throughput, p99) and their ratios to the direct call; it asserts no
// timing. Without VITOLA_BENCH=1 one short round only proves the harness.
//
//	VITOLA_BENCH=1 go test ./router -run TestRouterBenchmark -v -count=1
//	VITOLA_BENCH_ROUNDS=5 VITOLA_BENCH_SECONDS=3 (defaults 3 rounds of 2 s)
func TestRouterBenchmark(t *testing.T) {
	rounds, length := 3, 2*time.Second
	if os.Getenv("VITOLA_BENCH") != "1" {
		rounds, length = 1, 100*time.Millisecond
	}
	if n, err := strconv.Atoi(os.Getenv("VITOLA_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	if n, err := strconv.ParseFloat(os.Getenv("VITOLA_BENCH_SECONDS"), 64); err == nil && n > 0 {
		length = time.Duration(n * float64(time.Second))
	}
	const conns = 32

	t.Run("federationtesting", func(t *testing.T) {
		if os.Getenv("VITOLA_BENCH") != "1" {
			t.Skip("builds and runs tools/fedsubgraphs: only with VITOLA_BENCH=1 (make bench-router)")
		}
		config, urls := startFedSubgraphs(t)
		newRouter := func(tuning router.Tuning, h2c bool) string {
			composed, err := router.LoadComposed(config, urls)
			if err != nil {
				t.Fatal(err)
			}
			return serveBenchRouter(t, router.Config{Composed: composed, Client: &http.Client{Transport: router.SubgraphTransport(h2c)}, Keys: oneKey{}, Tuning: tuning})
		}
		defaults, dedupOff := newRouter(router.Tuning{}, false), newRouter(router.Tuning{NoInboundDedup: true}, false)
		bothOff := newRouter(router.Tuning{NoInboundDedup: true, NoSingleFlight: true}, false)
		bothOffH2C := newRouter(router.Tuning{NoInboundDedup: true, NoSingleFlight: true}, true)
		join := gqlBody(`{ topProducts { upc name price reviews { body } } }`)
		only := gqlBody(`{ topProducts { upc name price } }`)
		key := http.Header{access.Header: {federationTestKey}}
		runLoadCases(t, rounds, length, conns, []loadCase{
			{name: "products subgraph, direct", url: urls["products"], body: only},
			{name: "join, defaults", url: defaults, body: join, header: key},
			{name: "join, dedup off", url: dedupOff, body: join, header: key},
			{name: "join, both off", url: bothOff, body: join, header: key},
			{name: "products only, defaults", url: defaults, body: only, header: key},
			{name: "products only, both off", url: bothOff, body: only, header: key},
			{name: "join, both off, h2c", url: bothOffH2C, body: join, header: key},
		})
	})

	t.Run("vitola", func(t *testing.T) {
		e := newBenchEnv(t)
		newRouter := func(tuning router.Tuning) string {
			composed, err := router.LoadComposed(schema.RouterConfig, e.subgraphURLs)
			if err != nil {
				t.Fatal(err)
			}
			composed.SeparateCallers(schema.Subgraphs...)
			client := &http.Client{Transport: &trust.Transport{Base: router.SubgraphTransport(false), Issuer: e.issuer, Hosts: platform.SignedHosts(e.subgraphURLs)}}
			return serveBenchRouter(t, router.Config{Composed: composed, Client: client, Keys: e.keys, Tuning: tuning})
		}
		defaults, bothOff := newRouter(router.Tuning{}), newRouter(router.Tuning{NoInboundDedup: true, NoSingleFlight: true})
		search := gqlBody(`{ searchCigars(query: "padron", first: 5) { edges { node { id name brand { id name country } } } } }`)
		key := http.Header{access.Header: {e.serviceKey}}
		runLoadCases(t, rounds, length, conns, []loadCase{
			{name: "catalog subgraph, direct", url: e.catalog.URL + "/graphql", body: search, header: http.Header{trust.Header: {e.internalToken}}},
			{name: "search+brands, defaults", url: defaults, body: search, header: key},
			{name: "search+brands, both off", url: bothOff, body: search, header: key},
		})
	})
}

// startFedSubgraphs builds and starts tools/fedsubgraphs (a module of its
// own) and returns the composition it wrote and its subgraphs' URLs.
func startFedSubgraphs(t *testing.T) ([]byte, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fedsubgraphs")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "tools", "fedsubgraphs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tools/fedsubgraphs: %v\n%s", err, out)
	}
	configPath := filepath.Join(dir, "router-config.json")
	cmd := exec.Command(bin, configPath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // it exits when stdin closes
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("tools/fedsubgraphs: %v", err)
	}
	urls := map[string]string{}
	for _, f := range strings.Fields(line) {
		name, u, _ := strings.Cut(f, "=")
		urls[name] = u
	}
	config, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	return config, urls
}

// serveBenchRouter serves a router on loopback and returns its /graphql URL.
func serveBenchRouter(t *testing.T, cfg router.Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.Logger = zerolog.Nop()
	rt, err := router.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return srv.URL + "/graphql"
}

// loadCase is one kind of request the load sends; the first case is the
// baseline the others are compared with.
type loadCase struct {
	name   string
	url    string
	body   []byte
	header http.Header
}

type loadResult struct {
	rps float64
	p99 time.Duration
}

// runLoadCases measures every case rounds times, in alternating order, and
// logs the medians and their ratios to the first case's.
func runLoadCases(t *testing.T, rounds int, length time.Duration, conns int, cases []loadCase) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: newBenchTransport()}
	// Each case answers without errors before anything is timed; this warms
	// connections and caches too.
	for _, c := range cases {
		for range 50 {
			if err := sendLoad(client, c); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	results := make([][]loadResult, len(cases))
	for round := range rounds {
		order := make([]int, len(cases))
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			r, err := measureLoad(client, cases[i], conns, length)
			if err != nil {
				t.Fatalf("%s: %v", cases[i].name, err)
			}
			results[i] = append(results[i], r)
		}
	}
	base := medianLoad(results[0])
	var out strings.Builder
	fmt.Fprintf(&out, "%d connections, medians of %d rounds of %s\n", conns, rounds, length)
	fmt.Fprintf(&out, "%-28s %10s %9s %12s %10s\n", "case", "req/s", "p99", "× direct", "p99 ×")
	for i, c := range cases {
		m := medianLoad(results[i])
		fmt.Fprintf(&out, "%-28s %10.0f %9s %12.2f %10.2f\n", c.name, m.rps, m.p99.Round(10*time.Microsecond), m.rps/base.rps, float64(m.p99)/float64(base.p99))
	}
	t.Log("\n" + out.String())
}

func medianLoad(rs []loadResult) loadResult {
	rps := make([]float64, len(rs))
	p99 := make([]time.Duration, len(rs))
	for i, r := range rs {
		rps[i], p99[i] = r.rps, r.p99
	}
	slices.Sort(rps)
	slices.Sort(p99)
	return loadResult{rps: rps[len(rps)/2], p99: p99[len(p99)/2]}
}

// measureLoad keeps conns requests in flight for length, each connection
// sending its next request when the last is answered.
func measureLoad(client *http.Client, c loadCase, conns int, length time.Duration) (loadResult, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
	)
	stop := time.Now().Add(length)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			var err error
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err = sendLoad(client, c); err != nil {
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	if len(all) == 0 {
		return loadResult{}, fmt.Errorf("no request completed")
	}
	slices.Sort(all)
	return loadResult{rps: float64(len(all)) / elapsed.Seconds(), p99: all[len(all)*99/100]}, nil
}

// sendLoad sends one request of c and checks it was answered with data and
// no errors.
func sendLoad(client *http.Client, c loadCase) error {
	r, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		r.Header[k] = v
	}
	res, err := client.Do(r)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK || !bytes.HasPrefix(raw, []byte(`{"data":{`)) || bytes.Contains(raw, []byte(`"errors"`)) {
		return fmt.Errorf("status %d: %.300s", res.StatusCode, raw)
	}
	return nil
}
