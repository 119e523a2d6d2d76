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

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
)

// ledgerFaults breaks the shim's calls to the payments subgraph the way a
// network does: an answer lost after the ledger acted on the call, or a call
// that never arrives.
type ledgerFaults struct {
	base http.RoundTripper
	// mode: 0 healthy; 1 settling lands but its answer is lost, releasing
	// fails; 2 neither settling nor releasing arrives; 3 releasing fails.
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
	case strings.Contains(op, "SettleCredits") && mode == 2, strings.Contains(op, "ReleaseCredits"):
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

	// post sends the request of case idem (body seed) and checks its answer.
	post := func(t *testing.T, idem string, seed, status int) restResponse {
		t.Helper()
		r := f.postJSON(t, path, key, idem, fmt.Sprintf(`{"imageUrl": %q}`, photos.URL+fmt.Sprintf("/band.png?seed=%d", seed)))
		if r.Status != status {
			t.Fatalf("%s: %d %.300s, want %d", idem, r.Status, r.Body, status)
		}
		if status == 503 && (r.code() != "unavailable" || !strings.Contains(string(r.Body), "same Idempotency-Key")) {
			t.Fatalf("charge in doubt: %s", r.Body)
		}
		return r
	}
	lapse := func() { ahead.Add(int64(3 * time.Minute)) }
	// noHoldLeft: no reservation is still held (a sweep an hour ahead finds
	// none to give back).
	noHoldLeft := func(t *testing.T) {
		t.Helper()
		if n, err := p.Credits.ReleaseExpired(context.Background(), time.Now().Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("%d holds left open (%v)", n, err)
		}
	}
	for i, c := range []struct {
		name  string
		first int32 // the fault during the first attempt
		retry int32 // the fault during the first retry after the lease
	}{
		{"settled, answer lost", 1, 0},
		{"neither settled nor released", 2, 0},
		{"the earlier hold cannot be given back at first", 2, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.balance(t, id)
			idem := fmt.Sprintf("doubt-%d", i)
			faults.mode.Store(c.first)
			post(t, idem, 1, 503)
			faults.mode.Store(0)
			post(t, idem, 1, 409) // the key is kept while the charge is in doubt
			if c.retry != 0 {
				lapse()
				faults.mode.Store(c.retry)
				post(t, idem, 1, 503)
				faults.mode.Store(0)
			}
			lapse()
			r := post(t, idem, 1, 200)
			want := before - 1
			if r.Header.Get("X-Service-Ai-Credits-Remaining") != fmt.Sprint(want) || f.balance(t, id) != want {
				t.Fatalf("credits remaining %q, balance %d, want %d: one charge for one request", r.Header.Get("X-Service-Ai-Credits-Remaining"), f.balance(t, id), want)
			}
			// Stored once: replays from now on, still one charge.
			if r := post(t, idem, 1, 200); r.Header.Get("Idempotent-Replayed") != "true" || f.balance(t, id) != want {
				t.Fatalf("replay: %v balance %d", r.Header, f.balance(t, id))
			}
			noHoldLeft(t)
		})
	}
	// Another body under a key whose lease lapsed is another request: charged.
	t.Run("another body after the lease", func(t *testing.T) {
		before := f.balance(t, id)
		faults.mode.Store(1)
		post(t, "reused", 1, 503)
		faults.mode.Store(0)
		lapse()
		post(t, "reused", 2, 200)
		if b := f.balance(t, id); b != before-2 {
			t.Fatalf("balance %d, want %d: the first request and the second are charged once each", b, before-2)
		}
		noHoldLeft(t)
	})
}
