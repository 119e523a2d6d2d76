package platform_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/platform"
)

// identityRecorder slows every subgraph call down, so that identical requests
// overlap, and records whose identity each call carries.
type identityRecorder struct {
	base     http.RoundTripper
	verifier *trust.Verifier
	mu       sync.Mutex
	keys     map[string]int
}

func (r *identityRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	id, err := r.verifier.Verify(req.Header.Get(trust.Header))
	if err == nil {
		r.mu.Lock()
		r.keys[id.KeyID]++
		r.mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond)
	return r.base.RoundTrip(req)
}

// TestIdenticalRequestsOfTwoCallersAreNotMerged: the engine merges identical
// in-flight subgraph fetches; a fetch made for one developer key must never
// answer another key's request.
func TestIdenticalRequestsOfTwoCallersAreNotMerged(t *testing.T) {
	verifier, _ := trust.NewVerifier(internalKey)
	rec := &identityRecorder{verifier: verifier, keys: map[string]int{}}
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, InternalKey: internalKey, Demo: true, Logger: zerolog.Nop(),
		WrapSubgraphTransport: func(rt http.RoundTripper) http.RoundTripper { rec.base = rt; return rec },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p.API)
	defer srv.Close()
	keyA, plainA, _ := p.Keys.CreateKey(context.Background(), "a", nil)
	keyB, plainB, _ := p.Keys.CreateKey(context.Background(), "b", nil)

	var wg sync.WaitGroup
	for i := range 20 {
		for _, key := range []string{plainA, plainB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(`{"query":"{ brands(first: 3) { edges { node { name } } } }"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-service-key", key)
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != 200 {
					t.Errorf("request %d: %v", i, err)
					return
				}
				res.Body.Close()
			}()
		}
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.keys[keyA.ID] == 0 || rec.keys[keyB.ID] == 0 {
		t.Fatalf("subgraph calls per key: %v: one key's requests were answered with a fetch made for the other", rec.keys)
	}
}
