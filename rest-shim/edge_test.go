package restshim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	restshim "github.com/vitolahq/vitola/rest-shim"
)

// A handler below a route that answers an error in text (http.Error, a file
// server) is answered in JSON on the same status, with its other headers;
// on /graphql, in GraphQL's shape. JSON answers pass untouched.
func TestRouteErrorsAreJSON(t *testing.T) {
	gql := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "text":
			http.Error(w, "upstream said no: dial tcp 10.0.0.7:8090", http.StatusBadGateway)
		case "json":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"errors":[{"message":"mine"}]}`)
		case "redirect":
			http.Redirect(w, r, "/graphql/assets/", http.StatusFound)
		}
	})
	srv := httptest.NewServer(restshim.NewServer(restshim.Deps{GraphQL: gql}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		res, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}

	res, body := get("/graphql?case=text")
	var g struct {
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(body), &g); err != nil || res.StatusCode != 502 || len(g.Errors) != 1 || g.Errors[0].Extensions.Code != "UNAVAILABLE" || strings.Contains(body, "10.0.0.7") {
		t.Errorf("text error on /graphql: %d %s", res.StatusCode, body)
	}
	if res, body := get("/graphql?case=json"); res.StatusCode != 400 || body != `{"errors":[{"message":"mine"}]}` {
		t.Errorf("a JSON error was changed: %d %s", res.StatusCode, body)
	}
	if res, body := get("/graphql?case=redirect"); res.StatusCode != 302 || res.Header.Get("Location") != "/graphql/assets/" || !strings.Contains(body, `"MOVED"`) {
		t.Errorf("redirect: %d %v %s", res.StatusCode, res.Header, body)
	}
	res, body = get("/examples/none.js")
	var e struct{ Error, Message string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != 404 || e.Error != "not_found" || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("file server 404: %d %v %s", res.StatusCode, res.Header, body)
	}
}

// The mux's own verdicts: a 405 lists Allow, a path not in canonical form is
// a 308 to the canonical one (kept on this origin), the rest a 404.
func TestMuxAnswersAreJSON(t *testing.T) {
	srv := httptest.NewServer(restshim.NewPaymentsServer(restshim.Deps{}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct {
		method, path   string
		status         int
		code, location string
		allow          string
	}{
		{"POST", "/health", 405, "method_not_allowed", "", "GET, HEAD"},
		{"GET", "/a/../health", 308, "path_not_canonical", "/health", ""},
		{"GET", "/x//y?q=1", 308, "path_not_canonical", "/x/y?q=1", ""},
		{"GET", "/nothing", 404, "not_found", "", ""},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		req.URL.Opaque = tt.path[:strings.IndexByte(tt.path+"?", '?')] // sent as written, not cleaned
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var e struct{ Error, Message string }
		if json.Unmarshal(b, &e) != nil || res.StatusCode != tt.status || e.Error != tt.code || e.Message == "" ||
			res.Header.Get("Location") != tt.location || res.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d %v %s", tt.method, tt.path, res.StatusCode, res.Header, b)
		}
	}
}

// The listener rewrites net/http's canned refusals, and nothing else.
func TestRewriteCanned(t *testing.T) {
	const canned = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	for _, tt := range []struct {
		name, in string
		status   string
		code     string
	}{
		{"431", "HTTP/1.1 431 Request Header Fields Too Large" + canned + "431 Request Header Fields Too Large", "431", "headers_too_large"},
		{"400", "HTTP/1.1 400 Bad Request" + canned + "400 Bad Request", "400", "bad_request"},
		{"400 Host", "HTTP/1.1 400 Bad Request: missing required Host header" + canned + "400 Bad Request: missing required Host header", "400", "bad_request"},
		{"501", "HTTP/1.1 501 Not Implemented" + canned + "Unsupported transfer encoding", "501", "unsupported_transfer_encoding"},
		{"505", "HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + canned + "505 HTTP Version Not Supported: unsupported protocol version", "505", "http_version_not_supported"},
		{"417", "HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\nDate: Mon, 02 Jan 2026 15:04:05 GMT\r\n\r\n", "417", "expectation_failed"},
		{"a handler's 400", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nDate: Mon, 02 Jan 2026 15:04:05 GMT\r\n\r\n{}", "", ""},
		{"a handler's text 500", "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Mon, 02 Jan 2026 15:04:05 GMT\r\n\r\nx", "", ""},
		{"a 200", "HTTP/1.1 200 OK" + canned, "", ""},
		{"body bytes", "HTTP/1.1 431 but inside a body", "", ""},
	} {
		out := restshim.RewriteCanned([]byte(tt.in), 1<<20)
		if tt.code == "" {
			if out != nil {
				t.Errorf("%s: rewritten: %q", tt.name, out)
			}
			continue
		}
		res, err := http.ReadResponse(bufioReader(out), nil)
		if err != nil {
			t.Fatalf("%s: %v: %q", tt.name, err, out)
		}
		b, _ := io.ReadAll(res.Body)
		var e struct{ Error, Message string }
		if json.Unmarshal(b, &e) != nil || res.Status[:3] != tt.status || e.Error != tt.code || e.Message == "" ||
			!res.Close || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s: %s %v %s", tt.name, res.Status, res.Header, b)
		}
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// BenchmarkEdge: what the edge (the mux's verdicts in JSON, the error
// writer, panic recovery) adds to a route, against the same route on a bare
// mux in the same run.
func BenchmarkEdge(b *testing.B) {
	bare := http.NewServeMux()
	bare.Handle("GET /health", restshim.HealthHandler())
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"bare mux", bare}, {"edge", restshim.NewPaymentsServer(restshim.Deps{})}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/health", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// Every redirect to a cleaned path is a 308 path_not_canonical on this
// origin, whoever cleans: the mux, or the examples' file server below a route
// (a directory without its slash, index.html, "..%2f" segments), whose own
// answer is a 301.
func TestPathRedirectsAre308(t *testing.T) {
	srv := httptest.NewServer(restshim.NewServer(restshim.Deps{}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tt := range []struct{ path, location string }{
		{"/examples/widget/..%2f..", "/examples/"},
		{"/examples/widget", "/examples/widget/"},
		{"/examples/widget/index.html", "/examples/widget/"},
		{"/examples/./widget/", "/examples/widget/"},
		{"/examples/widget//", "/examples/widget/"},
		{"/examples", "/examples/"},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, srv.URL+tt.path, nil)
			req.URL.Opaque = tt.path // sent as written, not cleaned
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var e struct{ Error, Message string }
			if res.StatusCode != http.StatusPermanentRedirect || res.Header.Get("Location") != tt.location ||
				method == "GET" && (json.Unmarshal(b, &e) != nil || e.Error != "path_not_canonical" || !strings.Contains(e.Message, tt.location)) {
				t.Errorf("%s %s: %d %q %s, want a 308 path_not_canonical to %s", method, tt.path, res.StatusCode, res.Header.Get("Location"), b, tt.location)
			}
		}
	}
}
