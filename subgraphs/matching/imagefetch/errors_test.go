package imagefetch_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// internals are fragments of Go's error texts that name the platform's
// resolver, sockets, or Go itself: no message may carry them.
var internals = []string{"lookup ", ":53", "dial tcp", "read tcp", "connect:", "x509:", "tls:", "net/http", "*", "%!"}

func noInternals(t *testing.T, e *imagefetch.Error) {
	t.Helper()
	for _, s := range internals {
		if strings.Contains(e.Message, s) {
			t.Errorf("message %q names an internal (%q)", e.Message, s)
		}
	}
}

// TestFetchErrorsNameNoInternals: a host that does not exist, a refused
// connection, a server that speaks no TLS or presents an untrusted
// certificate: each message says what is wrong with the user's URL, never the
// resolver that was asked or Go's error text.
func TestFetchErrorsNameNoInternals(t *testing.T) {
	nxdomain, _ := fakeDNS(t, netip.Addr{})
	plain, _ := serve(t, body("image/png", pngBytes(t, 1, 1)))
	tlsServer := httptest.NewTLSServer(body("image/png", pngBytes(t, 1, 1)))
	t.Cleanup(tlsServer.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/band.png"
	closed.Close()

	tests := []struct {
		name    string
		url     string
		mention []string
	}{
		{"no such host", "http://nosuch.example.test/band.png", []string{"the host nosuch.example.test could not be found", "check the URL"}},
		{"connection refused", closedURL, []string{"127.0.0.1 refused the connection"}},
		{"https to a plain HTTP server", "https://" + strings.TrimPrefix(plain.URL, "http://") + "/band.png", []string{"127.0.0.1", "plain HTTP on an https URL"}},
		{"untrusted certificate", tlsServer.URL + "/band.png", []string{"127.0.0.1", "TLS certificate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loopback()
			cfg.Resolver = nxdomain
			_, err := imagefetch.New(cfg).Fetch(t.Context(), tt.url)
			noInternals(t, wantError(t, err, imagefetch.CodeFetchFailed, tt.mention...))
		})
	}
}

// TestFetchTimeoutNamesTheTimeoutThatFired: a server that never sends its
// headers is given up on at the stage timeout (connect, TLS, headers), a
// server that stalls in the body at the overall timeout; each message names
// the one that fired. With the defaults, the header wait fires at 10 s: the
// message once said 15 s.
func TestFetchTimeoutNamesTheTimeoutThatFired(t *testing.T) {
	img := pngBytes(t, 4, 4)
	slowHeaders := func(_ http.ResponseWriter, r *http.Request) { stallFor(r, 15*time.Second) }
	slowBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write(img[:20])
		w.(http.Flusher).Flush()
		stallFor(r, 15*time.Second)
	}
	tests := []struct {
		name           string
		handler        http.HandlerFunc
		timeout, stage time.Duration // zero: the defaults
		fires          time.Duration
		mention        string
	}{
		{"headers, defaults", slowHeaders, 0, 0, imagefetch.DefaultStageTimeout, "did not answer (TLS handshake and response headers) within 10s"},
		{"headers", slowHeaders, time.Second, 200 * time.Millisecond, 200 * time.Millisecond, "within 200ms"},
		{"body", slowBody, 600 * time.Millisecond, 200 * time.Millisecond, 600 * time.Millisecond, "took longer than 600ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := serve(t, tt.handler)
			cfg := loopback()
			cfg.Timeout, cfg.StageTimeout = tt.timeout, tt.stage
			start := time.Now()
			_, err := imagefetch.New(cfg).Fetch(t.Context(), s.URL)
			took := time.Since(start)
			e := wantError(t, err, imagefetch.CodeFetchTimeout, tt.mention)
			noInternals(t, e)
			if took < tt.fires || took > tt.fires+2*time.Second {
				t.Errorf("gave up after %v, want about %v", took, tt.fires)
			}
		})
	}
}

// stallFor waits until the client gives up, or d.
func stallFor(r *http.Request, d time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(d):
	}
}
