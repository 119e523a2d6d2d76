//go:build unix

package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	"github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/catalog/search"
)

var loadQueries = []string{"padron", "montecristo no 2", "ryj churchill", "hemingway short", "robusto", "davidof", "liga privada", "maduro toro", "oliva serie v", "cohiba"}

// TestSearchLoad compares the full REST search path (key check, shim, internal
// GraphQL call to the catalog subgraph, JSON both ways) with a bare net/http
// handler that calls the same search function and JSON-encodes the result, on
// loopback, in the same run. VITOLA_BENCH=1 measures (VITOLA_LOAD_SECONDS per
// side, VITOLA_LOAD_WORKERS); otherwise, as in CI, a short run only proves the
// harness works.
func TestSearchLoad(t *testing.T) {
	f := open(t, sqldb.Config{DataDir: t.TempDir()})

	bare := httptest.NewServer(bareSearch())
	defer bare.Close()

	seconds := 3.0
	if os.Getenv("VITOLA_BENCH") != "1" {
		seconds = 0.2
	}
	fmt.Sscan(os.Getenv("VITOLA_LOAD_SECONDS"), &seconds)
	workers := 16
	fmt.Sscan(os.Getenv("VITOLA_LOAD_WORKERS"), &workers)
	sides := []struct {
		name, base string
		lat        []time.Duration
		n          int
		took, cpu  time.Duration
	}{{name: "bare handler", base: bare.URL + "/?q="}, {name: "REST path", base: f.srv.URL + "/v1/cigars/search?q="}}
	for round := range 4 { // alternate, so both see the same machine
		for i := range sides {
			s := &sides[(i+round)%2]
			cpu0 := processCPU()
			lat, took := load(t, s.base, f.key, workers, time.Duration(seconds*float64(time.Second))/4)
			s.cpu += processCPU() - cpu0
			s.lat = append(s.lat, lat...)
			s.n += len(lat)
			s.took += took
		}
	}
	for i := range sides {
		s := &sides[i]
		if len(s.lat) == 0 {
			t.Fatalf("%s: no request completed", s.name)
		}
		slices.Sort(s.lat)
		t.Logf("%-12s %7.0f req/s  %5.0f µs CPU/req  p50 %8s  p99 %8s  (%d requests, %d workers)", s.name,
			float64(s.n)/s.took.Seconds(), float64(s.cpu.Microseconds())/float64(s.n), s.lat[len(s.lat)/2], s.lat[len(s.lat)*99/100], s.n, workers)
	}
	// On a machine shared with other work, throughput swings with it; the
	// process's CPU per request (load client included, the same on both
	// sides) is steadier, and a saturated server's throughput follows its
	// inverse.
	ratio := (float64(sides[1].n) / sides[1].took.Seconds()) / (float64(sides[0].n) / sides[0].took.Seconds())
	cpuRatio := (float64(sides[0].cpu) / float64(sides[0].n)) / (float64(sides[1].cpu) / float64(sides[1].n))
	t.Logf("REST path throughput = %.0f%% of the bare handler's, CPU-bound throughput (inverse CPU per request) %.0f%% (target ≥ 70%%)", ratio*100, cpuRatio*100)
}

// TestSearchPagesConcurrently: pages rendered and passed on in reused buffers
// (subgraph.Scratch, internal/inproc) never mix: every answer of many
// concurrent searches is the one the same search gets alone.
func TestSearchPagesConcurrently(t *testing.T) {
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	get := func(q string) string {
		req, _ := http.NewRequest("GET", f.srv.URL+"/v1/cigars/search?limit=100&q="+url.QueryEscape(q), nil)
		req.Header.Set("x-service-key", f.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	want := map[string]string{}
	for _, q := range loadQueries {
		want[q] = get(q)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				q := loadQueries[(w+i)%len(loadQueries)]
				if got := get(q); got != want[q] {
					t.Errorf("%q: answer differs from its answer alone:\n%.200s", q, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// bareSearch is the baseline: a net/http handler that runs the same search on
// an index of the same demo catalog and JSON-encodes the page, with nothing
// between the request and the index.
func bareSearch() http.Handler {
	facts, _ := demo.LoadFacts()
	brands, cigars := facts.Catalog()
	ix := search.Build(brands, cigars)
	type brandRef struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	type cigarOut struct {
		*catalog.Cigar
		Brand brandRef `json:"brand"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits, more := ix.SearchPage(r.URL.Query().Get("q"), "", nil, 20)
		out := make([]cigarOut, len(hits))
		for i, h := range hits {
			out[i] = cigarOut{Cigar: h.Cigar, Brand: brandRef{h.Brand.ID, h.Brand.Name}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"data": out, "pagination": map[string]any{"hasNextPage": more, "endCursor": nil}})
	})
}

// BenchmarkSearchPath is TestSearchLoad's two sides without the network: the
// CPU each handler spends on one search, the bare handler being the baseline
// the REST path (key check, shim, internal GraphQL call, catalog) is read
// against.
func BenchmarkSearchPath(b *testing.B) {
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: b.TempDir()}, InternalKey: internalKey, Demo: true, PublicURL: publicURL, Logger: zerolog.Nop(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	_, key, err := p.Keys.CreateKey(context.Background(), "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, side := range []struct {
		name, path string
		h          http.Handler
	}{{"bare", "/?q=", bareSearch()}, {"rest", "/v1/cigars/search?q=", p.API}} {
		reqs := make([]*http.Request, len(loadQueries))
		for i, q := range loadQueries {
			reqs[i] = httptest.NewRequest("GET", side.path+url.QueryEscape(q), nil)
			reqs[i].Header.Set("x-service-key", key)
		}
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				w := discardWriter{header: http.Header{}}
				side.h.ServeHTTP(&w, reqs[i%len(reqs)])
				if w.status != 0 && w.status != http.StatusOK {
					b.Fatalf("%s: %d", side.name, w.status)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// load sends the search's queries from workers for d and returns each one's
// latency.
func load(t *testing.T, base, key string, workers int, d time.Duration) ([]time.Duration, time.Duration) {
	return drive(t, workers, d, func(i int) *http.Request {
		req, _ := http.NewRequest("GET", base+url.QueryEscape(loadQueries[i%len(loadQueries)]), nil)
		req.Header.Set("x-service-key", key)
		return req
	})
}

// drive sends requests from workers for d, each worker its own sequence
// (request(i) for i from its number up), and returns each one's latency and
// the time it took. Any answer but a 200 fails the test.
func drive(t *testing.T, workers int, d time.Duration, request func(i int) *http.Request) ([]time.Duration, time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := w; time.Now().Before(deadline); i++ {
				took, ok := timed(t, client, request(i))
				if !ok {
					return
				}
				mine = append(mine, took)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, time.Since(start)
}

// timed sends req and reads its answer whole, and returns how long that took;
// an error or any answer but a 200 fails the test (and returns false).
func timed(t *testing.T, client *http.Client, req *http.Request) (time.Duration, bool) {
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0, false
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("%s: %d", req.URL, res.StatusCode)
		return 0, false
	}
	return time.Since(t0), true
}
