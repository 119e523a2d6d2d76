package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// TestOverCapacity drives the real API on loopback while other work fills
// the image decode budget: identify and fingerprint answer 503 over_capacity
// with Retry-After within about the capacity wait (not after the request's
// 90 s), charge nothing, and the same Idempotency-Key, sent again once there
// is room, runs the request and charges it once.
func TestOverCapacity(t *testing.T) {
	const wait = 200 * time.Millisecond
	f := openWith(t, sqldb.Config{DataDir: t.TempDir()}, func(o *platform.Options) {
		o.Logger = zerolog.Nop()
		// A demo band photo takes about 42 MB (decoding and fingerprinting
		// it): this budget holds one, and eight never fit.
		o.ImageDecodeBudget, o.CapacityWait = 64<<20, wait
	})
	p, srv := f.p, f.srv
	key, keyID := f.aiKey(t, 20)
	photo := dataURL("image/jpeg", f.servedBand(t, "padron-1964-anniversary.jpg"))
	body := fmt.Sprintf(`{"imageUrl": %q}`, photo)

	// Another request's eight photos: it holds what fits while it works on
	// them, the rest of its photos queued for the rest.
	holding, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	var held atomic.Int32
	go func() {
		eight := make([]string, imagefetch.MaxURLs)
		for i := range eight {
			eight[i] = photo
		}
		holder <- p.Images.FetchEach(context.Background(), eight, func(int, *imagefetch.Image) error {
			if held.Add(1) == 1 {
				close(holding)
			}
			<-release
			return nil
		})
	}()
	released := false
	freeBudget := func() {
		if !released {
			released = true
			close(release)
			if err := <-holder; err != nil {
				t.Errorf("the request holding the budget: %v", err)
			}
		}
	}
	defer freeBudget()
	select {
	case <-holding:
	case err := <-holder:
		t.Fatalf("the request holding the budget ended: %v", err)
	}

	// Before, a request waited for room until its time ran out (90 s), then
	// was told its image was bad (422 image_fetch_canceled).
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path, idem string) (restResponse, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-service-key", key)
		req.Header.Set("Idempotency-Key", idem)
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return restResponse{res.StatusCode, res.Header, b}, time.Since(start)
	}
	for _, path := range []string{"/v1/ai/cigars/identify", "/v1/ai/cigars/fingerprint"} {
		r, took := post(path, "capacity"+strings.ReplaceAll(path, "/", "-"))
		t.Logf("%s while the budget is full: %d in %v", path, r.Status, took)
		if r.Status != 503 || r.code() != "over_capacity" || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s while the budget is full: %d Retry-After %q %s, want 503 over_capacity, Retry-After 1",
				path, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
		if m := r.message(); !strings.Contains(m, "busy") || !strings.Contains(m, "retry in 1 s") || strings.Contains(m, "imageUrl") {
			t.Errorf("message %q: want the server busy and when to retry, no image blamed", m)
		}
		if took > 50*wait {
			t.Errorf("answered after %v: want about the capacity wait (%v)", took, wait)
		}
		if b := f.balance(t, keyID); b != 20 {
			t.Fatalf("balance %d after a 503, want 20: it must cost nothing", b)
		}
	}

	// Room again: the same key runs the request for real, charged once.
	freeBudget()
	r, _ := post("/v1/ai/cigars/identify", "capacity-v1-ai-cigars-identify")
	var got identified
	json.Unmarshal(r.Body, &got)
	if r.Status != 200 || got.Status != "matched" || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key once there is room: %d %s, want 200 matched (run, not replayed)", r.Status, r.Body)
	}
	remaining := r.Header.Get("X-Service-Ai-Credits-Remaining")
	if b := f.balance(t, keyID); remaining != fmt.Sprint(b) || b >= 20 {
		t.Fatalf("credits remaining %s, balance %d: want the request charged", remaining, b)
	}
	again, _ := post("/v1/ai/cigars/identify", "capacity-v1-ai-cigars-identify")
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || again.Header.Get("X-Service-Ai-Credits-Remaining") != remaining {
		t.Fatalf("the same key a third time: %d replayed %q, want the stored answer", again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	if b := f.balance(t, keyID); fmt.Sprint(b) != remaining {
		t.Errorf("balance %d after the replay, want %s: charged once", b, remaining)
	}
}
