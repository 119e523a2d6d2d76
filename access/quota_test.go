package access_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/internal/kv/memory"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newQuotas(t *testing.T, cfg access.QuotaConfig) (*access.Quotas, *fakeClock) {
	clk := &fakeClock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	s := memory.New(clk.Now)
	t.Cleanup(func() { s.Close() })
	return access.NewQuotas(s, cfg, zerolog.Nop()), clk
}

func TestQuotaHeadersAndRefusal(t *testing.T) {
	q, clk := newQuotas(t, access.QuotaConfig{Default: access.Limits{RPS: 2, CostPerMinute: 100}})
	ctx := context.Background()
	k := access.Key{ID: "key_a"}

	tests := []struct {
		name        string
		spend       func() access.Verdict
		refused     bool
		policy, now string
		retryAfter  string
	}{
		{"first request", func() access.Verdict { return q.Requests(ctx, k) }, false, `"requests";q=2;w=1`, `"requests";r=1;t=1`, ""},
		{"second request", func() access.Verdict { return q.Requests(ctx, k) }, false, `"requests";q=2;w=1`, `"requests";r=0;t=1`, ""},
		{"third request", func() access.Verdict { return q.Requests(ctx, k) }, true, `"requests";q=2;w=1`, `"requests";r=0;t=1`, "1"},
		{"cost 40", func() access.Verdict { return q.Cost(ctx, k, 40) }, false, `"cost";q=100;w=60;qu="graphql-cost"`, `"cost";r=60;t=24`, ""},
		{"cost 70", func() access.Verdict { return q.Cost(ctx, k, 70) }, true, `"cost";q=100;w=60;qu="graphql-cost"`, `"cost";r=60;t=24`, "6"},
		{"cost above the whole quota", func() access.Verdict { return q.Cost(ctx, k, 101) }, true, `"cost";q=100;w=60;qu="graphql-cost"`, `"cost";r=60;t=24`, ""},
	}
	for _, tt := range tests {
		v := tt.spend()
		h := http.Header{}
		v.SetHeaders(h)
		if v.Refused != tt.refused || h.Get("RateLimit-Policy") != tt.policy || h.Get("RateLimit") != tt.now || h.Get("Retry-After") != tt.retryAfter {
			t.Errorf("%s: refused %v, headers %v", tt.name, v.Refused, h)
		}
		if v.Refused && v.Message() == "" {
			t.Errorf("%s: no message", tt.name)
		}
	}
	// Another key has its own budget; the key's own limit overrides the default.
	if v := q.Requests(ctx, access.Key{ID: "key_b"}); v.Refused {
		t.Fatal("another key was limited")
	}
	own := access.Key{ID: "key_d", Limits: access.Limits{RPS: 10}}
	for i := range 11 {
		if v := q.Requests(ctx, own); v.Refused != (i == 10) {
			t.Fatalf("the key's own limit of 10: request %d refused %v", i+1, v.Refused)
		}
	}
	clk.Advance(time.Second)
	if v := q.Requests(ctx, k); v.Refused {
		t.Fatal("the quota did not refill")
	}
	// Both verdicts of one GraphQL request share one line of each field.
	h := http.Header{}
	q.Requests(ctx, access.Key{ID: "key_c"}).SetHeaders(h)
	q.Cost(ctx, access.Key{ID: "key_c"}, 1).SetHeaders(h)
	if got := h.Get("RateLimit"); got != `"requests";r=1;t=1, "cost";r=99;t=1` {
		t.Fatalf("RateLimit = %q", got)
	}
}

// failingKV is a kv.Store whose every call fails (a Redis outage).
type failingKV struct{ kv.Store }

func (failingKV) Spend(context.Context, string, kv.Bucket, int64) (kv.Spent, error) {
	return kv.Spent{}, errors.New("connection refused")
}

func TestQuotaModesAndOutages(t *testing.T) {
	ctx := context.Background()
	k := access.Key{ID: "key_a"}
	measure, _ := newQuotas(t, access.QuotaConfig{Default: access.Limits{RPS: 1}, Mode: access.QuotaMeasure})
	var seen []string
	measure.Observe(func(policy string, enforced bool) {
		if enforced {
			t.Error("measure mode enforced")
		}
		seen = append(seen, policy)
	})
	for range 3 {
		if measure.Requests(ctx, k).Refused {
			t.Fatal("measure mode refused")
		}
	}
	if len(seen) != 2 {
		t.Fatalf("measure mode counted %d would-be refusals, want 2", len(seen))
	}

	off, _ := newQuotas(t, access.QuotaConfig{Default: access.Limits{RPS: 1}, Mode: access.QuotaOff})
	for range 3 {
		h := http.Header{}
		v := off.Requests(ctx, k)
		v.SetHeaders(h)
		if v.Refused || len(h) != 0 {
			t.Fatalf("off: refused %v, headers %v", v.Refused, h)
		}
	}
	// No default and no own limit: no quota. A nil *Quotas: none either.
	none, _ := newQuotas(t, access.QuotaConfig{})
	var nilQuotas *access.Quotas
	for range 3 {
		if none.Requests(ctx, k).Refused || nilQuotas.Cost(ctx, k, 1e6).Refused {
			t.Fatal("refused without a quota")
		}
	}
	// A quota store that fails lets requests through.
	broken := access.NewQuotas(failingKV{}, access.QuotaConfig{Default: access.Limits{RPS: 1}}, zerolog.Nop())
	for range 3 {
		if broken.Requests(ctx, k).Refused {
			t.Fatal("a broken quota store refused")
		}
	}
	if _, err := access.ParseQuotaMode("sometimes"); err == nil {
		t.Fatal("ParseQuotaMode accepted nonsense")
	}
}
