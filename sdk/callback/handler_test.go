package callback_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/sdk/callback"
)

// receiver is a Handler over HTTP whose next records what reached it.
type receiver struct {
	*httptest.Server
	calls atomic.Int32
	event *callback.Event
	raw   string
}

func newReceiver(t *testing.T, v callback.Verifier) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(callback.Handler(v, func(w http.ResponseWriter, r *http.Request, e *callback.Event) {
		rc.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		rc.event, rc.raw = e, string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) post(t *testing.T, method string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, rc.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header[k] = []string{v}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var answer struct{ Error, Message string }
	json.NewDecoder(res.Body).Decode(&answer)
	return res.StatusCode, answer.Error
}

// Every vector over real HTTP: a verified callback reaches next with its raw
// bytes; a refused one gets 401 (or 400 for a signed body that is not an
// event) with the vector's code, and next never runs.
func TestHandlerOverHTTP(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			rc := newReceiver(t, v.verifier())
			status, code := rc.post(t, http.MethodPost, v.Headers, v.Body)
			if v.Expect.OK {
				if status != http.StatusNoContent || rc.calls.Load() != 1 {
					t.Fatalf("status %d (%s), %d calls; want 204 from next", status, code, rc.calls.Load())
				}
				if rc.event.ID != v.Expect.ID || rc.raw != v.Body {
					t.Fatalf("next got %s and body %q", rc.event.ID, rc.raw)
				}
				return
			}
			want := http.StatusUnauthorized
			if v.Expect.Error == callback.CodeInvalidBody {
				want = http.StatusBadRequest
			}
			if status != want || code != v.Expect.Error || rc.calls.Load() != 0 {
				t.Fatalf("status %d %s, %d calls; want %d %s before next", status, code, rc.calls.Load(), want, v.Expect.Error)
			}
		})
	}
}

func TestHandlerRefusals(t *testing.T) {
	now := time.Now()
	v := callback.Verifier{Secrets: []string{"whsec_a"}}
	signed := func(body string) map[string]string {
		return map[string]string{
			callback.HeaderTimestamp: strconv.FormatInt(now.Unix(), 10),
			callback.HeaderSignature: callback.Sign("whsec_a", []byte(body), now),
		}
	}
	event := `{"id":"fev_1","type":"purchase.succeeded","createdAt":"2026-01-01T00:00:00.000Z","data":{}}`

	t.Run("GET is 405", func(t *testing.T) {
		rc := newReceiver(t, v)
		if status, code := rc.post(t, http.MethodGet, signed(""), ""); status != http.StatusMethodNotAllowed || code != "method_not_allowed" || rc.calls.Load() != 0 {
			t.Fatalf("%d %s", status, code)
		}
	})
	t.Run("a body over 1 MB is 413", func(t *testing.T) {
		rc := newReceiver(t, v)
		big := `{"id":"fev_1","type":"purchase.succeeded","createdAt":"2026-01-01T00:00:00.000Z","data":{"pad":"` + strings.Repeat("x", callback.MaxBodyBytes) + `"}}`
		if status, code := rc.post(t, http.MethodPost, signed(big), big); status != http.StatusRequestEntityTooLarge || code != callback.CodeBodyTooLarge || rc.calls.Load() != 0 {
			t.Fatalf("%d %s", status, code)
		}
	})
	t.Run("a signed event just under the bound is passed on", func(t *testing.T) {
		rc := newReceiver(t, v)
		pad := strings.Repeat("x", callback.MaxBodyBytes-len(event)-len(`"pad":""`))
		body := strings.Replace(event, `"data":{}`, `"data":{"pad":"`+pad+`"}`, 1)
		if len(body) != callback.MaxBodyBytes {
			t.Fatalf("body of %d bytes", len(body))
		}
		if status, code := rc.post(t, http.MethodPost, signed(body), body); status != http.StatusNoContent || rc.calls.Load() != 1 {
			t.Fatalf("%d %s", status, code)
		}
	})
	t.Run("a stale callback is refused before its body is read", func(t *testing.T) {
		rc := newReceiver(t, v)
		h := signed(event)
		h[callback.HeaderTimestamp] = strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
		// The body would be too large: the headers decide first.
		if status, code := rc.post(t, http.MethodPost, h, strings.Repeat("x", 2*callback.MaxBodyBytes)); status != http.StatusUnauthorized || code != callback.CodeTimestampOutOfTolerance {
			t.Fatalf("%d %s", status, code)
		}
	})
	t.Run("a receiver without its secret fails at start-up", func(t *testing.T) {
		for _, bad := range []callback.Verifier{{}, {Secrets: []string{""}}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("Handler(%+v) did not panic", bad)
					}
				}()
				callback.Handler(bad, func(http.ResponseWriter, *http.Request, *callback.Event) {})
			}()
		}
	})
}
