package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// TestPaymentSessionLoad measures POST /payment-sessions then GET
// …/status over HTTP on loopback, on SQLite and PostgreSQL, beside a bare
// net/http handler that decodes the same body and answers a session-sized JSON
// in the same run: at a fixed rate (VITOLA_LOAD_RATE pairs a second, default
// 200, so twice as many requests) it reports p50/p99 of each request, then
// the throughput of 16 closed-loop workers. VITOLA_BENCH=1 measures
// (VITOLA_LOAD_SECONDS per phase, default 5); otherwise a short run proves the
// harness.
func TestPaymentSessionLoad(t *testing.T) {
	seconds, rate := 5.0, 200.0
	if os.Getenv("VITOLA_BENCH") != "1" {
		seconds = 0.3
	}
	fmt.Sscan(os.Getenv("VITOLA_LOAD_SECONDS"), &seconds)
	fmt.Sscan(os.Getenv("VITOLA_LOAD_RATE"), &rate)
	phase := time.Duration(seconds * float64(time.Second))

	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var in map[string]any
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"id":"pss_0000000000000000","state":"open","billingAccountId":"acc_0000000000000000","offerId":"off_0000000000000000",`+
			`"returnUrl":"https://shop.example/paid","cancelUrl":"https://shop.example/paid","parentOrigin":null,"expiresAt":"2026-11-25T10:30:00.000Z",`+
			`"createdAt":"2026-11-25T10:00:00.000Z","redeemedAt":null,"closedAt":null,"purchase":{"id":"pur_0000000000000000","kind":"checkout","state":"open",`+
			`"resourceType":"ai_credits","quantity":100,"price":{"amount":500,"currency":"USD"},"failureCode":null,"failureMessage":null,`+
			`"createdAt":"2026-11-25T10:00:00.000Z","updatedAt":"2026-11-25T10:00:00.000Z"}}}`)
	}))
	defer bare.Close()

	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openPayments(t, cfg)
			ctx := context.Background()
			shop := f.client(t, payments.NewClient{})
			account := data(t, f.call(t, shop, "POST", "/billing-accounts/resolve", `{"accountReference": "load"}`))["id"].(string)
			offers, err := f.p.PaymentsService.Store.ActiveOffers(ctx, "", payments.AICredits)
			if err != nil || len(offers) == 0 {
				t.Fatal("no demo offer", err)
			}
			body := `{"billingAccountId": "` + account + `", "offerId": "` + offers[0].ID + `", "returnUrl": "https://shop.example/paid"}`
			var seq atomic.Int64
			httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			do := func(method, url, body, key string) (string, time.Duration) {
				var rd io.Reader
				if body != "" {
					rd = strings.NewReader(body)
				}
				req, _ := http.NewRequest(method, url, rd)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+shop.secret)
				req.Header.Set("X-Service-Client-Id", shop.id)
				if key != "" {
					req.Header.Set("Idempotency-Key", key)
				}
				t0 := time.Now()
				res, err := httpc.Do(req)
				if err != nil {
					t.Error(err)
					return "", 0
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				took := time.Since(t0)
				if res.StatusCode >= 300 {
					t.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
					return "", took
				}
				var out struct{ Data struct{ ID string } }
				json.Unmarshal(b, &out)
				return out.Data.ID, took
			}
			// pair creates a session and reads its status; it returns both latencies.
			pair := func(base string) [2]time.Duration {
				id, create := do("POST", base+"/payment-sessions", body, fmt.Sprintf("load-%d", seq.Add(1)))
				_, status := do("GET", base+"/payment-sessions/"+id+"/status", "", "")
				return [2]time.Duration{create, status}
			}
			sides := []struct{ name, base string }{{"bare handler", bare.URL}, {"payments API", f.pay.URL + "/api/v1"}}
			for _, s := range sides {
				paced := paced(rate, phase, func() [2]time.Duration { return pair(s.base) })
				n, took := closedLoop(16, phase, func() { pair(s.base) })
				t.Logf("%-13s %s: at %.0f pairs/s create p50 %s p99 %s, status p50 %s p99 %s; 16 workers: %.0f pairs/s",
					backend, s.name, rate, pct(paced, 0, 50), pct(paced, 0, 99), pct(paced, 1, 50), pct(paced, 1, 99), float64(n)/took.Seconds())
			}
		})
	}
}

// paced starts fn rate times a second for d, each in its own goroutine (an
// open loop: a slow answer does not slow the arrivals), and returns every
// call's latencies.
func paced(rate float64, d time.Duration, fn func() [2]time.Duration) [][2]time.Duration {
	var mu sync.Mutex
	var out [][2]time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		wg.Go(func() {
			l := fn()
			mu.Lock()
			out = append(out, l)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// closedLoop runs fn from workers for d and counts the calls.
func closedLoop(workers int, d time.Duration, fn func()) (int64, time.Duration) {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				fn()
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start)
}

// pct is the p-th percentile of the i-th latency of the calls.
func pct(calls [][2]time.Duration, i, p int) time.Duration {
	if len(calls) == 0 {
		return 0
	}
	l := make([]time.Duration, len(calls))
	for j, c := range calls {
		l[j] = c[i]
	}
	slices.Sort(l)
	return l[min(len(l)-1, len(l)*p/100)].Round(10 * time.Microsecond)
}
