package platform_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/platform"
)

// The attacks of issue 17 on HTTP and JSON, against the real servers of both
// origins (platform.HTTPServer and platform.Serve, as `vitola serve` runs
// them) on loopback.
func TestHardeningHTTP(t *testing.T) {
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	api := serveOrigin(t, f.p.API)
	payments := serveOrigin(t, f.p.Payments)
	f.srv.URL = "http://" + api // every request below goes to the real server
	t.Run("PaidRoutesRequireJSONBeforeAnyCharge", f.testPaidRoutesRequireJSON)
	t.Run("StrictBodies", f.testStrictBodies)
	t.Run("TwoIdempotencyKeys", f.testTwoIdempotencyKeys)
	t.Run("NoInternalsInMessages", f.testNoInternalsInMessages)
	t.Run("EveryErrorIsJSON/API", func(t *testing.T) { testEveryErrorIsJSON(t, api, true) })
	t.Run("EveryErrorIsJSON/Payments", func(t *testing.T) { testEveryErrorIsJSON(t, payments, false) })
}

// serveOrigin serves h the way `vitola serve` does, with the default
// limits, on a loopback port, and returns its address.
func serveOrigin(t *testing.T, h http.Handler) string {
	return serveWithin(t, h, platform.DefaultServerLimits())
}

// paidRoute is a route that charges, with a body it takes and its price.
type paidRoute struct {
	path, body string
	price      int64
}

// paidRoutes are the routes that charge, each with a body it takes.
func paidRoutes(photos string) []paidRoute {
	img := fmt.Sprintf(`{"imageUrl": %q}`, photos+"/band.png?seed=7")
	return []paidRoute{
		{"/v1/ai/cigars/fingerprint", img, 1},
		{"/v1/ai/cigars/identify", img, 2},
		{"/v1/matches", fmt.Sprintf(`{"imageUrl": %q, "prompt": "padron"}`, photos+"/band.png?seed=7"), 2},
	}
}

func (f *fixture) send(t *testing.T, path string, header http.Header, body string) restResponse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return restResponse{res.StatusCode, res.Header, b}
}

// Identify, its alias and fingerprint answer 415 to any body that is not
// application/json, before an Idempotency-Key is recorded or a credit held:
// the balance stays, and the same key then runs (is not a replay).
func (f *fixture) testPaidRoutesRequireJSON(t *testing.T) {
	photos := bandPhotos(t)
	for _, rt := range paidRoutes(photos.URL) {
		t.Run(rt.path, func(t *testing.T) {
			key, id := f.aiKey(t, 10)
			idem := "media-" + strings.ReplaceAll(rt.path, "/", "-")
			for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
				h := http.Header{"X-Service-Key": {key}, "Idempotency-Key": {idem}}
				if ct != "" {
					h.Set("Content-Type", ct)
				}
				r := f.send(t, rt.path, h, rt.body)
				if r.Status != 415 || r.code() != "unsupported_media_type" {
					t.Errorf("Content-Type %q: %d %.200s, want 415 unsupported_media_type", ct, r.Status, r.Body)
				}
				if b := f.balance(t, id); b != 10 {
					t.Fatalf("Content-Type %q: balance %d, want 10 (nothing charged)", ct, b)
				}
			}
			for _, ct := range []string{"application/json", "Application/JSON; charset=UTF-8"} {
				h := http.Header{"X-Service-Key": {key}, "Idempotency-Key": {idem + ct[:4]}, "Content-Type": {ct}}
				r := f.send(t, rt.path, h, rt.body)
				if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("Content-Type %q after the refusals: %d %v %.200s, want a 200 that is not a replay", ct, r.Status, r.Header, r.Body)
				}
			}
			r := f.send(t, rt.path, http.Header{"X-Service-Key": {key}, "Idempotency-Key": {idem}, "Content-Type": {"application/json"}}, rt.body)
			if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("the refused requests' key: %d %v, want a first run", r.Status, r.Header)
			}
			if b := f.balance(t, id); b != 10-3*rt.price {
				t.Fatalf("balance %d, want %d: three requests charged once each", b, 10-3*rt.price)
			}
		})
	}
}

// jsonRoute is a route that reads a JSON body, and how to call it.
type jsonRoute struct {
	path  string
	paid  bool
	limit int
	body  string // a body it takes; attacks are made of it
}

func (f *fixture) jsonRoutes() []jsonRoute {
	return []jsonRoute{
		{"/v1/cigars/resolve", false, 64 << 10, `{"query": "padron"}`},
		{"/v1/ai/cigars/fingerprint/recognize", false, 1 << 20, `{"fingerprint": {"object": "band_fingerprint"}, "limit": 3}`},
		{"/v1/ai/cigars/fingerprint", true, 12 << 20, `{"imageUrl": "https://images.example/band.jpg"}`},
		{"/v1/ai/cigars/identify", true, 12 << 20, `{"imageUrl": "https://images.example/band.jpg"}`},
		{"/v1/matches", true, 12 << 20, `{"imageUrl": "https://images.example/band.jpg"}`},
	}
}

// post sends body to the route as JSON with the keys it needs.
func (f *fixture) postRoute(t *testing.T, rt jsonRoute, aiKey, body string, extra http.Header) restResponse {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}, "X-Service-Key": {f.key}}
	if rt.paid {
		h.Set("X-Service-Key", aiKey)
		h.Set("Idempotency-Key", fmt.Sprintf("strict-%d", time.Now().UnixNano()))
	}
	for k, v := range extra {
		h[k] = v
	}
	return f.send(t, rt.path, h, body)
}

// Trailing data and duplicate members, at any depth, are 400 invalid_body on
// every route that reads JSON; a body over the route's limit is 413.
func (f *fixture) testStrictBodies(t *testing.T) {
	aiKey, id := f.aiKey(t, 10)
	for _, rt := range f.jsonRoutes() {
		name := rt.body[2 : strings.Index(rt.body[2:], `"`)+2] // the body's first member
		for _, c := range []struct {
			attack, body string
			status       int
			code         string
		}{
			{"trailing object", rt.body + ` {"x": 1}`, 400, "invalid_body"},
			{"trailing garbage", rt.body + `]`, 400, "invalid_body"},
			{"duplicate member", `{"` + name + `": 1, ` + rt.body[1:], 400, "invalid_body"},
			{"duplicate member, escaped", `{"\u00` + fmt.Sprintf("%x", name[0]) + name[1:] + `": 1, ` + rt.body[1:], 400, "invalid_body"},
			{"duplicate inside an unknown member", strings.TrimSuffix(rt.body, "}") + `, "x": {"a": 1, "a": 2}}`, 400, "invalid_body"},
			{"name in another case", `{"` + strings.ToUpper(name) + `"` + rt.body[len(name)+3:], 400, "invalid_body"},
			{"over the limit", `{"` + name + `": "` + strings.Repeat("x", rt.limit) + `"}`, 413, "body_too_large"},
		} {
			r := f.postRoute(t, rt, aiKey, c.body, nil)
			if r.Status != c.status || r.code() != c.code {
				t.Errorf("%s, %s: %d %.300s, want %d %s", rt.path, c.attack, r.Status, r.Body, c.status, c.code)
			}
		}
		if rt.path == "/v1/ai/cigars/fingerprint/recognize" {
			r := f.postRoute(t, rt, aiKey, `{"fingerprint": {"object": "band_fingerprint", "views": [{"seal": 1, "seal": 2}]}}`, nil)
			if r.Status != 400 || r.code() != "invalid_body" || !strings.Contains(r.message(), `fingerprint.views[0]: the member "seal" appears twice`) {
				t.Errorf("a duplicate deep in the fingerprint: %d %s", r.Status, r.Body)
			}
		}
	}
	if b := f.balance(t, id); b != 10 {
		t.Fatalf("balance %d after refused bodies, want 10", b)
	}
}

// Two Idempotency-Key headers are a 400: which one names the request would
// depend on who reads them.
func (f *fixture) testTwoIdempotencyKeys(t *testing.T) {
	aiKey, id := f.aiKey(t, 10)
	photos := bandPhotos(t)
	for _, rt := range paidRoutes(photos.URL) {
		h := http.Header{"Content-Type": {"application/json"}, "X-Service-Key": {aiKey}, "Idempotency-Key": {"two-a", "two-b"}}
		r := f.send(t, rt.path, h, rt.body)
		if r.Status != 400 || r.code() != "idempotency_key_required" || !strings.Contains(r.message(), "one Idempotency-Key") {
			t.Errorf("%s with two keys: %d %s", rt.path, r.Status, r.Body)
		}
	}
	if b := f.balance(t, id); b != 10 {
		t.Fatalf("balance %d, want 10", b)
	}
}

// internals are what no message may show: Go types and encoding/json's
// wording, file paths, stack details, addresses.
var internals = regexp.MustCompile(`Go (value|struct)|struct ?\{|json:|\.go\b|\w+\.[A-Z]\w+|map\[|interface ?\{|goroutine|panic|0x[0-9a-f]{6,}|(^|[\s"(])/(home|usr|work|tmp|root|var|etc|opt|go)/|\d+\.\d+\.\d+\.\d+`)

// Bad bodies of every kind on every JSON route: each is a 400 whose message
// says where and what was expected, naming nothing inside the server.
func (f *fixture) testNoInternalsInMessages(t *testing.T) {
	aiKey, _ := f.aiKey(t, 0)
	common := []string{`[]`, `"text"`, `42`, `null`, `{`, `{"a":}`, `{"x": 1}`, "{\"imageUrl\": \"\xff\"}", `{"query": "\ud800"}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100), ``}
	perRoute := map[string][]string{
		"/v1/cigars/resolve":                  {`{"query": 5}`, `{"query": ["padron"]}`, `{"limit": "3"}`, `{"limit": 2.5}`, `{"limit": 1e99}`, `{"brand": {}}`, `{"name": true}`},
		"/v1/ai/cigars/fingerprint/recognize": {`{"fingerprint": 5}`, `{"limit": "x"}`, `{"limit": -1.5}`, `{"fingerprint": "x", "limit": 99999999999999999999}`},
		"/v1/ai/cigars/fingerprint":           {`{"imageUrl": 5}`, `{"imageUrls": "x"}`, `{"imageUrls": [1]}`, `{"imageUrls": {"a": "b"}}`},
		"/v1/ai/cigars/identify":              {`{"imageUrl": 5}`, `{"force": "yes"}`, `{"suggestionLimit": "3"}`, `{"suggestionLimit": 1.5}`, `{"prompt": []}`, `{"researchMode": 1}`},
		"/v1/matches":                         {`{"imageUrls": [null, 2]}`, `{"force": 1}`},
	}
	for _, rt := range f.jsonRoutes() {
		for _, body := range append(perRoute[rt.path], common...) {
			r := f.postRoute(t, rt, aiKey, body, nil)
			var e struct{ Error, Message string }
			if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != 400 || e.Error == "" || e.Message == "" {
				t.Errorf("%s %q: %d %s, want a 400 error body", rt.path, body, r.Status, r.Body)
				continue
			}
			if m := internals.FindString(e.Message); m != "" {
				t.Errorf("%s %q: message %q names internals (%q)", rt.path, body, e.Message, m)
			}
		}
	}
	// A wrong kind names the field and what it takes.
	r := f.postRoute(t, f.jsonRoutes()[0], "", `{"query": "padron", "limit": "3"}`, nil)
	if !strings.Contains(r.message(), "limit: expected a whole number, got a string") {
		t.Errorf("message %q does not name the field and what it takes", r.message())
	}
}

// rawResponse is an answer read off the wire.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// raw sends bytes to addr on a fresh connection and reads one response.
func raw(t *testing.T, addr string, request []byte) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The server may answer before it has read everything (a 431): write
	// while reading.
	go conn.Write(request)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%.60q: no HTTP response: %v", request, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return rawResponse{res.StatusCode, res.Header, body}
}

// tlsClientHello is the first flight of a TLS client: what a client that
// mistook the port for https sends.
func tlsClientHello(t *testing.T) []byte {
	client, server := net.Pipe()
	go tls.Client(client, &tls.Config{ServerName: "vitola.test"}).Handshake()
	buf := make([]byte, 64<<10)
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := server.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
	server.Close()
	return buf[:n]
}

// Every answer of an origin to a malformed, odd or refused request, sent as
// raw bytes, is the platform's JSON error body with a stable code: the
// ServeMux's (redirects, 405, 404) and net/http's own (431, 400, 501, 505,
// 417) included.
func testEveryErrorIsJSON(t *testing.T, addr string, api bool) {
	req := func(lines ...string) []byte { return []byte(strings.Join(lines, "\r\n") + "\r\n\r\n") }
	big := strings.Repeat("a", 2<<20)
	tests := []struct {
		name     string
		request  []byte
		status   int
		code     string
		location string
		allow    string
	}{
		{"dot-dot path", req("GET /v1/../health HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/health", ""},
		{"double slash", req("GET //health?x=1 HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/health?x=1", ""},
		{"dot segment", req("GET /./health HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/health", ""},
		{"absolute form to another host", req("GET http://evil.example/a/../health HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/health", ""},
		{"unknown method on a known path", req("DELETE /health HTTP/1.1", "Host: x"), 405, "method_not_allowed", "", "GET, HEAD"},
		{"POST on a GET route", req("POST /health HTTP/1.1", "Host: x", "Content-Length: 0"), 405, "method_not_allowed", "", "GET, HEAD"},
		{"unknown path", req("GET /nothing-here HTTP/1.1", "Host: x"), 404, "not_found", "", ""},
		{"asterisk target", req("GET * HTTP/1.1", "Host: x"), 400, "bad_request", "", ""},
		{"CONNECT", req("CONNECT evil.example:443 HTTP/1.1", "Host: evil.example:443"), 404, "not_found", "", ""},
		{"two Host headers", req("GET /health HTTP/1.1", "Host: a", "Host: b"), 400, "bad_request", "", ""},
		{"no Host header", req("GET /health HTTP/1.1"), 400, "bad_request", "", ""},
		{"malformed Host", req("GET /health HTTP/1.1", "Host: a b"), 400, "bad_request", "", ""},
		{"2 MB header", req("GET /health HTTP/1.1", "Host: x", "X-Big: "+big), 431, "headers_too_large", "", ""},
		{"malformed request line", req("GARBAGE"), 400, "bad_request", "", ""},
		{"control character in the path", req("GET /he\x01alth HTTP/1.1", "Host: x"), 400, "bad_request", "", ""},
		{"bad header name", req("GET /health HTTP/1.1", "Host: x", "Bad Header: y"), 400, "bad_request", "", ""},
		{"two Content-Lengths", req("POST /health HTTP/1.1", "Host: x", "Content-Length: 1", "Content-Length: 2"), 400, "bad_request", "", ""},
		{"unknown transfer coding", req("POST /health HTTP/1.1", "Host: x", "Transfer-Encoding: gzip"), 501, "unsupported_transfer_encoding", "", ""},
		{"HTTP/2 request line", req("GET /health HTTP/2.0", "Host: x"), 505, "http_version_not_supported", "", ""},
		{"unknown expectation", req("GET /health HTTP/1.1", "Host: x", "Expect: the-unexpected"), 417, "expectation_failed", "", ""},
		{"TLS to the plain port", tlsClientHello(t), 400, "bad_request", "", ""},
		{"HTTP/2 preface (h2c is off)", []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 400, "bad_request", "", ""},
		{"OPTIONS on a path without it", req("OPTIONS /health HTTP/1.1", "Host: x"), 405, "method_not_allowed", "", "GET, HEAD"},
	}
	if api {
		tests = append(tests, []struct {
			name     string
			request  []byte
			status   int
			code     string
			location string
			allow    string
		}{
			{"cleaned path of a route", req("POST /v1/ai//cigars/./identify HTTP/1.1", "Host: x", "Content-Length: 0"), 308, "path_not_canonical", "/v1/ai/cigars/identify", ""},
			{"subtree without its slash", req("GET /graphql/assets HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/graphql/assets/", ""},
			{"DELETE on a REST route", req("DELETE /v1/cigars/search HTTP/1.1", "Host: x"), 405, "method_not_allowed", "", "GET, HEAD"},
			{"GET on a POST route", req("GET /v1/ai/cigars/identify HTTP/1.1", "Host: x"), 405, "method_not_allowed", "", "POST"},
			{"a file the examples do not have", req("GET /examples/nothing.js HTTP/1.1", "Host: x"), 404, "not_found", "", ""},
			{"a directory of the examples without its slash", req("GET /examples/widget HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/examples/widget/", ""},
			{"an escaped .. in the examples' path", req("GET /examples/widget/..%2f.. HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/examples/", ""},
			{"the examples' index.html", req("GET /examples/widget/index.html HTTP/1.1", "Host: x"), 308, "path_not_canonical", "/examples/widget/", ""},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := raw(t, addr, tt.request)
			var e struct{ Error, Message string }
			if err := json.Unmarshal(r.body, &e); err != nil || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Fatalf("%d %s %q: not the JSON error body", r.status, r.header.Get("Content-Type"), r.body)
			}
			if r.status != tt.status || e.Error != tt.code || e.Message == "" {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tt.status, tt.code)
			}
			if tt.location != "" && r.header.Get("Location") != tt.location {
				t.Errorf("Location %q, want %q", r.header.Get("Location"), tt.location)
			}
			if tt.allow != "" && r.header.Get("Allow") != tt.allow {
				t.Errorf("Allow %q, want %q", r.header.Get("Allow"), tt.allow)
			}
			if m := internals.FindString(e.Message); m != "" {
				t.Errorf("message %q names internals (%q)", e.Message, m)
			}
		})
	}
	if api {
		// /graphql answers GraphQL's error shape, whatever the method.
		r := raw(t, addr, req("DELETE /graphql HTTP/1.1", "Host: x", "Accept: application/json"))
		var g struct {
			Errors []struct {
				Message    string
				Extensions struct{ Code string }
			}
		}
		if err := json.Unmarshal(r.body, &g); err != nil || r.status != 405 || len(g.Errors) != 1 || g.Errors[0].Extensions.Code == "" {
			t.Errorf("DELETE /graphql: %d %s", r.status, r.body)
		}
	}
}

// A response not written within the write timeout loses its connection; the
// paid image routes, slower by design, extend theirs to their own deadline.
// A write timeout of 1 ns has passed before any handler writes.
func TestWriteDeadlines(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("late")) })
	addr := serveWithin(t, slow, platform.ServerLimits{WriteTimeout: time.Nanosecond})
	if res, err := http.Get("http://" + addr + "/"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("an answer past the write timeout arrived: %d %q", res.StatusCode, b)
	}

	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	f.srv.URL = "http://" + serveWithin(t, f.p.API, platform.ServerLimits{WriteTimeout: time.Nanosecond})
	photos := bandPhotos(t)
	key, _ := f.aiKey(t, 10)
	rt := paidRoutes(photos.URL)[0]
	r := f.send(t, rt.path, http.Header{"X-Service-Key": {key}, "Idempotency-Key": {"deadline"}, "Content-Type": {"application/json"}}, rt.body)
	if r.Status != 200 {
		t.Fatalf("%s under a 1 ns write timeout: %d %.200s, want 200 (its own deadline)", rt.path, r.Status, r.Body)
	}
}

// serveWithin serves h as `vitola serve` does, within lim, on a loopback
// port, and returns its address.
func serveWithin(t *testing.T, h http.Handler, lim platform.ServerLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := platform.HTTPServer(h, lim)
	go platform.Serve(srv, ln, lim.MaxConnsPerClient)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
