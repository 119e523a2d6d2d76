package platform_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/sqldb"
)

// ledgerFaults breaks the shim's calls to the payments subgraph the way a
// network does: an answer lost after the ledger acted on the call, or a call
// that never arrives.
type ledgerFaults struct {
	base http.RoundTripper
	// mode: 0 healthy; 1 settling lands but its answer is lost, releasing
	// fails; 2 neither settling nor releasing arrives.
	mode atomic.Int32
}

func (l *ledgerFaults) RoundTrip(r *http.Request) (*http.Response, error) {
	mode := l.mode.Load()
	if mode == 0 || !strings.HasPrefix(r.URL.Host, "payments") || r.Body == nil {
		return l.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	switch op := string(body); {
	case strings.Contains(op, "SettleCredits") && mode == 1:
		if res, err := l.base.RoundTrip(r); err == nil {
			res.Body.Close()
		}
		return nil, fmt.Errorf("connection reset after settling (test fault)")
	case strings.Contains(op, "SettleCredits"), strings.Contains(op, "ReleaseCredits"):
		return nil, fmt.Errorf("connection refused (test fault)")
	}
	return l.base.RoundTrip(r)
}

// A charge in doubt (settling and releasing both unconfirmed) answers 503 and
// keeps the Idempotency-Key; a retry after the key's lease has lapsed finds
// what became of the first hold in the ledger: charged already, it runs again
// for free; still held, it is given back before the retry's own hold. Either
// way the request is charged exactly once.
func TestChargeInDoubtIsChargedOnce(t *testing.T) {
	faults := &ledgerFaults{}
	p, err := platform.Open(context.Background(), platform.Options{
		Store: sqldb.Config{DataDir: t.TempDir()}, InternalKey: internalKey, Demo: true, PublicURL: publicURL,
		Logger: zerolog.New(os.Stderr).Level(zerolog.Disabled), FetchAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		WrapShimTransport: func(rt http.RoundTripper) http.RoundTripper { faults.base = rt; return faults },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The idempotency clock runs ahead on demand, to let a lease lapse.
	var ahead atomic.Int64
	p.Idempotency.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	srv := httptest.NewServer(p.API)
	defer srv.Close()
	f := &fixture{srv: srv, p: p}
	photos := bandPhotos(t)
	key, id := f.aiKey(t, 10)
	const path = "/v1/ai/cigars/fingerprint"

	for _, c := range []struct {
		name string
		mode int32
	}{{"settled, answer lost", 1}, {"neither settled nor released", 2}} {
		t.Run(c.name, func(t *testing.T) {
			before := f.balance(t, id)
			idem := fmt.Sprintf("doubt-%d", c.mode)
			body := fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+fmt.Sprintf("/band.png?seed=%d", c.mode))
			faults.mode.Store(c.mode)
			r := f.postJSON(t, path, key, idem, body)
			faults.mode.Store(0)
			if r.Status != 503 || r.code() != "unavailable" || !strings.Contains(string(r.Body), "same Idempotency-Key") {
				t.Fatalf("charge in doubt: %d %s", r.Status, r.Body)
			}
			if r := f.postJSON(t, path, key, idem, body); r.Status != 409 {
				t.Fatalf("while the key is kept: %d %s", r.Status, r.Body)
			}
			ahead.Add(int64(3 * time.Minute))
			r = f.postJSON(t, path, key, idem, body)
			want := before - 1
			if r.Status != 200 || r.Header.Get("X-Service-Ai-Credits-Remaining") != fmt.Sprint(want) {
				t.Fatalf("retry after the lease: %d %.300s, credits remaining %q", r.Status, r.Body, r.Header.Get("X-Service-Ai-Credits-Remaining"))
			}
			if b := f.balance(t, id); b != want {
				t.Fatalf("balance %d, want %d: one charge for one request", b, want)
			}
			// Settled once: replays from now on, still one charge.
			if r := f.postJSON(t, path, key, idem, body); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" || f.balance(t, id) != want {
				t.Fatalf("replay: %d %v balance %d", r.Status, r.Header, f.balance(t, id))
			}
			// The ledger holds no hold left open.
			a, _ := p.Credits.Account(context.Background(), id)
			entries, err := p.Credits.Entries(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, e := range entries {
				sum += e.Amount
			}
			if sum != want {
				t.Fatalf("ledger sums to %d, balance %d", sum, want)
			}
		})
	}
}
