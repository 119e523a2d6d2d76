package platform_test

import (
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

	"github.com/vitolahq/vitola/internal/sqldb"
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
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits, more := ix.SearchPage(r.URL.Query().Get("q"), "", nil, 20)
		out := make([]cigarOut, len(hits))
		for i, h := range hits {
			out[i] = cigarOut{Cigar: h.Cigar, Brand: brandRef{h.Brand.ID, h.Brand.Name}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"data": out, "pagination": map[string]any{"hasNextPage": more, "endCursor": nil}})
	}))
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
		took       time.Duration
	}{{name: "bare handler", base: bare.URL + "/?q="}, {name: "REST path", base: f.srv.URL + "/v1/cigars/search?q="}}
	for round := range 4 { // alternate, so both see the same machine
		for i := range sides {
			s := &sides[(i+round)%2]
			lat, took := load(t, s.base, f.key, workers, time.Duration(seconds*float64(time.Second))/4)
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
		t.Logf("%-12s %7.0f req/s  p50 %8s  p99 %8s  (%d requests, %d workers)", s.name,
			float64(s.n)/s.took.Seconds(), s.lat[len(s.lat)/2], s.lat[len(s.lat)*99/100], s.n, workers)
	}
	ratio := (float64(sides[1].n) / sides[1].took.Seconds()) / (float64(sides[0].n) / sides[0].took.Seconds())
	t.Logf("REST path throughput = %.0f%% of the bare handler's (target ≥ 70%%)", ratio*100)
}

// load sends requests from workers for d and returns each one's latency.
func load(t *testing.T, base, key string, workers int, d time.Duration) ([]time.Duration, time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
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
				req, _ := http.NewRequest("GET", base+url.QueryEscape(loadQueries[i%len(loadQueries)]), nil)
				req.Header.Set("x-service-key", key)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					t.Errorf("%s: %d", base, res.StatusCode)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, time.Since(start)
}
