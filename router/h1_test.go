package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// h1Server is a loopback server that counts the connections it accepted and
// the requests it served.
type h1Server struct {
	*httptest.Server
	conns, requests atomic.Int32
}

func newH1Server(t *testing.T, h http.HandlerFunc) *h1Server {
	s := &h1Server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// echo answers the request's method, URI, body and a few headers.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %s %q %s %s", r.Method, r.RequestURI, r.Proto, b, r.Header.Get("X-Test"), r.Header.Get("Content-Type"))
}

func newTestH1() *h1Transport {
	return newH1Transport(standardTransport(false), 4)
}

// post sends a replayable POST (a query's fetch) with a body and returns the
// response body.
func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(withReplayable(ctx), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test", "yes")
	res, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// TestH1TransportSendsAndReuses: a query's fetches go out as net/http would
// send them (method, URI with its query string, headers, body) and share one
// connection one after another.
func TestH1TransportSendsAndReuses(t *testing.T) {
	srv := newH1Server(t, echo)
	tr := newTestH1()
	for i := range 5 {
		got, err := post(t, tr, context.Background(), srv.URL+"/graphql?x=1", fmt.Sprintf(`{"n":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`POST /graphql?x=1 HTTP/1.1 "{\"n\":%d}" yes application/json`, i); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential requests, want 1", n)
	}
}

// TestH1TransportRetriesAClosedConnection: the server closed the idle
// connection (a keep-alive timeout, a restart); the next query's fetch goes
// out again on a new connection, once, and succeeds.
func TestH1TransportRetriesAClosedConnection(t *testing.T) {
	srv := newH1Server(t, echo)
	tr := newTestH1()
	if _, err := post(t, tr, context.Background(), srv.URL, "a"); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // the FIN reaches this side
	got, err := post(t, tr, context.Background(), srv.URL, "b")
	if err != nil {
		t.Fatalf("after the server closed the idle connection: %v", err)
	}
	if !strings.Contains(got, `"b"`) || srv.requests.Load() != 2 || srv.conns.Load() != 2 {
		t.Fatalf("got %s; %d requests on %d connections, want 2 on 2", got, srv.requests.Load(), srv.conns.Load())
	}
}

// TestH1TransportLeavesOthersToNetHTTP: what it cannot send again (a POST not
// marked replayable: a mutation's fetch), HTTPS, and bodies of unknown length
// go through net/http, and still work.
func TestH1TransportLeavesOthersToNetHTTP(t *testing.T) {
	srv := newH1Server(t, echo)
	tls := httptest.NewTLSServer(http.HandlerFunc(echo))
	defer tls.Close()
	var fallback atomic.Int32
	tr := newH1Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		fallback.Add(1)
		t := standardTransport(false)
		t.TLSClientConfig = tls.Client().Transport.(*http.Transport).TLSClientConfig
		return t.RoundTrip(r)
	}), 4)
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		h1   bool
	}{
		{"mutation POST", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("m"))
			return r
		}, false},
		{"GET", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL+"/?q=1", nil)
			return r
		}, true},
		{"POST with an Idempotency-Key", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("i"))
			r.Header.Set("Idempotency-Key", "k")
			return r
		}, true},
		{"query POST of unknown length", func() *http.Request {
			r, _ := http.NewRequestWithContext(withReplayable(context.Background()), http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("u")))
			return r
		}, false},
		{"HTTPS", func() *http.Request {
			r, _ := http.NewRequestWithContext(withReplayable(context.Background()), http.MethodPost, tls.URL, strings.NewReader("s"))
			return r
		}, false},
	} {
		before := fallback.Load()
		res, err := tr.RoundTrip(tc.req())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), "HTTP/1.1") {
			t.Fatalf("%s: %d %s", tc.name, res.StatusCode, b)
		}
		if viaFallback := fallback.Load() > before; viaFallback == tc.h1 {
			t.Fatalf("%s: through net/http %v, want %v", tc.name, viaFallback, !tc.h1)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestH1TransportResponses: chunked and empty bodies are read whole and the
// connection reused; a body closed before its end, and a response that asks
// to close, close the connection; an informational response is skipped.
func TestH1TransportResponses(t *testing.T) {
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			io.WriteString(w, "part one,")
			w.(http.Flusher).Flush() // no Content-Length: chunked
			io.WriteString(w, "part two")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case "/big":
			io.WriteString(w, strings.Repeat("x", 1<<20))
		case "/early-hints":
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "final")
		}
	})
	tr := newTestH1()
	get := func(path string, readAll bool) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer res.Body.Close()
		if !readAll {
			buf := make([]byte, 10)
			io.ReadFull(res.Body, buf)
			return string(buf)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return fmt.Sprintf("%d %s", res.StatusCode, b)
	}
	for _, tc := range []struct {
		path, want string
		conns      int32 // after it
	}{
		{"/chunked", "200 part one,part two", 1},
		{"/empty", "204 ", 1},
		{"/early-hints", "200 final", 1},
		{"/close", "200 bye", 1},
		{"/chunked", "200 part one,part two", 2}, // a new connection after /close
	} {
		if got := get(tc.path, true); got != tc.want {
			t.Fatalf("%s: got %q, want %q", tc.path, got, tc.want)
		}
		if n := srv.conns.Load(); n != tc.conns {
			t.Fatalf("after %s: %d connections, want %d", tc.path, n, tc.conns)
		}
	}
	get("/big", false) // closed after 10 bytes of a megabyte
	if got := get("/empty", true); got != "204 " || srv.conns.Load() != 3 {
		t.Fatalf("after a body closed early: %q on %d connections, want a third", got, srv.conns.Load())
	}
	// A request that asks to close its connection closes it.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/empty", nil)
	req.Header.Set("Connection", "keep-alive, close")
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if got := get("/empty", true); got != "204 " || srv.conns.Load() != 4 {
		t.Fatalf("after Connection: close: %q on %d connections, want a fourth", got, srv.conns.Load())
	}
}

// TestH1TransportCancel: a context ending while the subgraph takes its time
// ends the call with the context's error, and the connection is not reused.
func TestH1TransportCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newH1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	})
	defer close(release)
	tr := newTestH1()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := post(t, tr, ctx, srv.URL+"/slow", "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if got, err := post(t, tr, context.Background(), srv.URL+"/fast", "y"); err != nil || got != "ok" {
		t.Fatalf("after a cancelled call: %q %v", got, err)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the cancelled one is not reused)", n)
	}
}

// TestH1TransportRefusesHeaderInjection: a header value with CR or LF (a
// forwarded client header, say) must not add a header or a request.
func TestH1TransportRefusesHeaderInjection(t *testing.T) {
	srv := newH1Server(t, echo)
	tr := newTestH1()
	for _, h := range []struct{ name, value string }{
		{"X-Test", "a\r\nX-Injected: 1"},
		{"X-Test", "a\nb"},
		{"X-Bad Name", "a"},
		{"X-Test:", "a"},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header[h.name] = []string{h.value}
		if res, err := tr.RoundTrip(req); err == nil {
			res.Body.Close()
			t.Fatalf("%q: %q was sent", h.name, h.value)
		}
	}
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("the server saw %d requests", n)
	}
	// And it goes on working.
	if got, err := post(t, tr, context.Background(), srv.URL, "z"); err != nil || !strings.Contains(got, `"z"`) {
		t.Fatalf("%q %v", got, err)
	}
}

// TestH1TransportConcurrent: many callers at once each get their own
// response, over at most as many connections as were in flight.
func TestH1TransportConcurrent(t *testing.T) {
	srv := newH1Server(t, echo)
	const callers, each = 16, 50
	// Room for every caller's connection when idle: none is closed and dialled
	// again, so connections never outnumber callers.
	tr := newH1Transport(standardTransport(false), callers)
	errs := make(chan error, callers)
	for c := range callers {
		go func() {
			for i := range each {
				body := fmt.Sprintf("%d-%d", c, i)
				got, err := post(t, tr, context.Background(), srv.URL, body)
				if err == nil && !bytes.Contains([]byte(got), []byte(`"`+body+`"`)) {
					err = fmt.Errorf("sent %s, got %s", body, got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.conns.Load(); n > callers {
		t.Fatalf("%d connections for %d callers", n, callers)
	}
}
