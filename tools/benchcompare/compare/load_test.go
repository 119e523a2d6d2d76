package compare_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

// The load loop over a real server on loopback: every answered call counted
// with its latency, and a failing call failing the measurement (a side that
// answers errors quickly is not faster).
func TestClosedLoop(t *testing.T) {
	var fail atomic.Bool
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if fail.Load() && r.URL.Query().Get("n") == "bad" {
			http.Error(w, `{"error":"boom","message":"a failure that is long enough to be cut short `+strings.Repeat("x", 300)+`"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	call := func(q string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := compare.Get(ctx, srv.URL+"/v1/x?n="+q)
			return err
		}
	}

	n, errs, lat, err := compare.ClosedLoop(ctx, 4, 200*time.Millisecond, call("good"))
	if err != nil || errs != 0 || n == 0 || len(lat) != n || int64(n) != served.Load() || !slices.IsSorted(lat) {
		t.Fatalf("good: %d calls, %d failed, %d latencies (sorted %t), %d served, %v", n, errs, len(lat), slices.IsSorted(lat), served.Load(), err)
	}

	fail.Store(true)
	var i atomic.Int64
	n, errs, _, err = compare.ClosedLoop(ctx, 2, 100*time.Millisecond, func(ctx context.Context) error {
		if i.Add(1)%2 == 0 {
			return call("bad")(ctx)
		}
		return call("good")(ctx)
	})
	if err == nil || errs == 0 || n == 0 || !strings.Contains(err.Error(), "GET /v1/x: 503") || strings.Contains(err.Error(), "n=bad") ||
		strings.Contains(err.Error(), "vk_not_in_messages") || len(err.Error()) > 400 {
		t.Fatalf("half failing: %d calls, %d failed, %v", n, errs, err)
	}

	ended, cancel := context.WithCancel(ctx)
	cancel()
	if n, _, _, err := compare.ClosedLoop(ended, 2, time.Minute, call("good")); n != 0 || err == nil {
		t.Fatalf("an ended context: %d calls, %v", n, err)
	}
}
