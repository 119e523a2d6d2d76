//go:build unix

package platform_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/router"
)

// telemetryPair is two demo platforms in one process: one with telemetry
// off, one with metrics on and traces sampled at 1% exported to a local
// OTLP receiver (which reads and drops them), as the issue measures.
type telemetryPair struct {
	off, on *platform.Platform
	key     map[*platform.Platform]string
}

func openTelemetryPair(tb testing.TB) *telemetryPair {
	tb.Helper()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	tb.Cleanup(receiver.Close)
	// VITOLA_BENCH_TELEMETRY=metrics or =traces turns on one half only, to
	// tell their costs apart; =off leaves both sides off, an A/A run that
	// shows how far the measure itself swings.
	o := telemetry.Options{Metrics: true, OTLPEndpoint: receiver.URL, SampleRatio: 0.01, Logger: zerolog.Nop()}
	switch os.Getenv("VITOLA_BENCH_TELEMETRY") {
	case "metrics":
		o.OTLPEndpoint = ""
	case "traces":
		o.Metrics = false
	case "off":
		o = telemetry.Options{Logger: zerolog.Nop()}
	}
	tel, err := telemetry.New(context.Background(), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tel.Close(context.Background()) })
	pair := &telemetryPair{key: map[*platform.Platform]string{}}
	for _, t := range []*telemetry.Telemetry{nil, tel} {
		p, err := platform.Open(context.Background(), platform.Options{
			Store: sqldb.Config{DataDir: tb.TempDir()}, InternalKey: internalKey, Demo: true, PublicURL: publicURL,
			Logger: zerolog.Nop(), Telemetry: t,
			// VITOLA_BENCH_DEDUP=off: identical requests in flight share no
			// execution, so the telemetry's cost is not mixed with how many
			// of the load's identical queries happen to overlap.
			RouterTuning: router.Tuning{NoInboundDedup: os.Getenv("VITOLA_BENCH_DEDUP") == "off", NoSingleFlight: os.Getenv("VITOLA_BENCH_DEDUP") == "off"},
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(p.Close)
		_, key, err := p.Keys.CreateKey(context.Background(), "bench", nil)
		if err != nil {
			tb.Fatal(err)
		}
		pair.key[p] = key
		if t == nil {
			pair.off = p
		} else {
			pair.on = p
		}
	}
	return pair
}

// telemetryRequests are the router's and the REST shim's hot paths: a
// federated GraphQL query (three subgraph fetches), a one-subgraph query,
// and the REST search.
var telemetryRequests = []struct{ name, method, path, body string }{
	{"graphql-federated", "POST", "/graphql", `{"operationName":"Events","query":"query Events { events(first: 3) { edges { node { name venue { name } brand { name } } } } }"}`},
	{"graphql-catalog", "POST", "/graphql", `{"query":"{ brands(first: 5) { edges { node { id name country } } } }"}`},
	{"rest-search", "GET", "/v1/cigars/search?q=padron", ""},
}

func (tp *telemetryPair) request(p *platform.Platform, method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("x-service-key", tp.key[p])
	return r
}

// BenchmarkTelemetry is each hot path in process (no sockets: the worst
// case for the relative cost), with telemetry off and on, in the same run:
//
//	go test ./platform -run '^$' -bench Telemetry -count 6 -cpu 1
//
// Compare off and on of each path (benchstat, or the ratio of ns/op).
// cpu-ns/op is the process's CPU time per request, steadier than ns/op on a
// shared machine.
func BenchmarkTelemetry(b *testing.B) {
	tp := openTelemetryPair(b)
	for _, q := range telemetryRequests {
		for _, side := range []struct {
			name string
			p    *platform.Platform
		}{{"off", tp.off}, {"on", tp.on}} {
			b.Run(q.name+"/"+side.name, func(b *testing.B) {
				b.ReportAllocs()
				n, cpu0 := 0, processCPU()
				for b.Loop() {
					n++
					w := httptest.NewRecorder()
					side.p.API.ServeHTTP(w, tp.request(side.p, q.method, q.path, q.body))
					if w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
			})
		}
	}
}

// TestTelemetryLoad is the measure: throughput of each hot path
// over loopback, telemetry on (metrics, traces at 1% to a local receiver)
// against off, alternating sides in rounds so both see the same machine.
// VITOLA_BENCH=1 measures (VITOLA_LOAD_SECONDS per side and path,
// VITOLA_LOAD_WORKERS); otherwise a short run proves the harness works.
func TestTelemetryLoad(t *testing.T) {
	tp := openTelemetryPair(t)
	off, on := httptest.NewServer(tp.off.API), httptest.NewServer(tp.on.API)
	defer off.Close()
	defer on.Close()
	seconds := 4.0
	if os.Getenv("VITOLA_BENCH") != "1" {
		seconds = 0.2
	}
	fmt.Sscan(os.Getenv("VITOLA_LOAD_SECONDS"), &seconds)
	workers := 8
	fmt.Sscan(os.Getenv("VITOLA_LOAD_WORKERS"), &workers)
	const rounds = 6
	for _, q := range telemetryRequests {
		type side struct {
			name, url, key string
			n              int
			took, cpu      time.Duration
			lat            []time.Duration
		}
		sides := []*side{{name: "off", url: off.URL, key: tp.key[tp.off]}, {name: "on", url: on.URL, key: tp.key[tp.on]}}
		for round := range rounds {
			for i := range sides {
				s := sides[(i+round)%2]
				cpu0 := processCPU()
				lat, took := loadRequest(t, s.url+q.path, q.method, q.body, s.key, workers, time.Duration(seconds*float64(time.Second))/rounds)
				s.cpu += processCPU() - cpu0
				s.n += len(lat)
				s.took += took
				s.lat = append(s.lat, lat...)
			}
		}
		for _, s := range sides {
			if s.n == 0 {
				t.Fatalf("%s %s: no request completed", q.name, s.name)
			}
			slices.Sort(s.lat)
			t.Logf("%-18s telemetry %-3s %7.0f req/s  %6.0f µs CPU/req  p50 %8s  p99 %8s  (%d requests, %d workers)", q.name, s.name,
				float64(s.n)/s.took.Seconds(), float64(s.cpu.Microseconds())/float64(s.n), s.lat[len(s.lat)/2], s.lat[len(s.lat)*99/100], s.n, workers)
		}
		// On a machine shared with other work, throughput swings with it;
		// the process's CPU per request (client included) is steadier, and
		// the throughput a saturated server reaches follows its inverse.
		// Inbound deduplication shares executions among identical queries in
		// flight: how many share depends on timing, so it is shown for both.
		if q.method == "POST" {
			for i, p := range []*platform.Platform{tp.off, tp.on} {
				st := p.Router.DedupStats()
				t.Logf("%-18s telemetry %-3s router executions %d, callers served by another's execution %d (totals so far)", q.name, sides[i].name, st.Executions, st.Shared)
			}
		}
		ratio := (float64(sides[1].n) / sides[1].took.Seconds()) / (float64(sides[0].n) / sides[0].took.Seconds())
		cpuRatio := (float64(sides[0].cpu) / float64(sides[0].n)) / (float64(sides[1].cpu) / float64(sides[1].n))
		t.Logf("%-18s with telemetry on: throughput %.1f%% of off, CPU-bound throughput (inverse CPU per request) %.1f%% (target ≥ 95%%)", q.name, ratio*100, cpuRatio*100)
	}
}

// loadRequest sends one request over and over from workers for d and
// returns each one's latency.
func loadRequest(t *testing.T, target, method, body, key string, workers int, d time.Duration) ([]time.Duration, time.Duration) {
	return drive(t, workers, d, func(int) *http.Request {
		req, _ := http.NewRequest(method, target, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("x-service-key", key)
		return req
	})
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	cpu, _ := processUsage()
	return cpu
}

// processUsage is the CPU time this process has used (user and system) and
// how many times its threads have gone to sleep waiting for something
// (voluntary context switches); zero when the system cannot tell.
func processUsage() (cpu time.Duration, sleeps int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw
}
