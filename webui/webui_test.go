package webui_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/webui"
)

// spec is deliberately odd bytes: CRLF, non-ASCII, no final newline.
var spec = []byte("openapi: 3.1.0\r\ninfo:\r\n  title: Vitola \u2013 test\r\n  version: 0.0.1\r\npaths: {}")

// newServer mounts both handlers the way the package doc says.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	docs := webui.DocsHandler(spec)
	mux.Handle("/docs", docs)
	mux.Handle("/docs/", docs)
	gq := webui.GraphiQLHandler("")
	mux.Handle("/graphql", gq)
	mux.Handle("/graphql/", gq)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request; header values are set verbatim (an explicit
// Accept-Encoding turns off the client's transparent decompression).
func do(t *testing.T, srv *httptest.Server, method, target string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, body}
}

const (
	ctHTML = "text/html; charset=utf-8"
	ctYAML = "application/yaml; charset=utf-8"
	ctJS   = "text/javascript; charset=utf-8"
	ctCSS  = "text/css; charset=utf-8"
	ctJSON = "application/json; charset=utf-8"
)

func TestRoutes(t *testing.T) {
	srv := newServer(t)
	tests := []struct {
		name        string
		method      string
		path        string
		wantStatus  int
		wantType    string
		wantCache   string // "" = don't care
		wantErrCode string // JSON error code, for error responses
	}{
		{"docs page", "GET", "/docs", 200, ctHTML, "no-cache", ""},
		{"docs page with slash", "GET", "/docs/", 200, ctHTML, "no-cache", ""},
		{"docs page HEAD", "HEAD", "/docs", 200, ctHTML, "no-cache", ""},
		{"docs page query string", "GET", "/docs?x=1", 200, ctHTML, "", ""},
		{"openapi", "GET", "/docs/openapi.yaml", 200, ctYAML, "no-cache", ""},
		{"openapi HEAD", "HEAD", "/docs/openapi.yaml", 200, ctYAML, "", ""},
		{"swagger bundle", "GET", "/docs/assets/swagger-ui-dist@5.35.0/swagger-ui-bundle.js", 200, ctJS, "public, max-age=31536000, immutable", ""},
		{"swagger css", "GET", "/docs/assets/swagger-ui-dist@5.35.0/swagger-ui.css", 200, ctCSS, "public, max-age=31536000, immutable", ""},
		{"docs unknown page", "GET", "/docs/nope", 404, ctJSON, "no-store", "not_found"},
		{"docs index.html", "GET", "/docs/index.html", 404, ctJSON, "", "not_found"},
		{"docs unknown asset", "GET", "/docs/assets/nope.js", 404, ctJSON, "", "not_found"},
		{"docs asset of other version", "GET", "/docs/assets/swagger-ui-dist@5.0.0/swagger-ui.css", 404, ctJSON, "", "not_found"},
		{"docs license not served", "GET", "/docs/assets/swagger-ui-dist@5.35.0/LICENSE", 404, ctJSON, "", "not_found"},
		{"docs graphiql asset", "GET", "/docs/assets/graphiql@4.1.2/graphiql.min.js", 404, ctJSON, "", "not_found"},
		{"docs assets dir", "GET", "/docs/assets/", 404, ctJSON, "", "not_found"},
		{"docs POST", "POST", "/docs", 405, ctJSON, "no-store", "method_not_allowed"},
		{"openapi PUT", "PUT", "/docs/openapi.yaml", 405, ctJSON, "", "method_not_allowed"},
		{"openapi DELETE", "DELETE", "/docs/openapi.yaml", 405, ctJSON, "", "method_not_allowed"},
		{"asset OPTIONS", "OPTIONS", "/docs/assets/swagger-ui-dist@5.35.0/swagger-ui.css", 405, ctJSON, "", "method_not_allowed"},
		{"unknown POST is 404", "POST", "/docs/nope", 404, ctJSON, "", "not_found"},

		{"graphiql page", "GET", "/graphql", 200, ctHTML, "no-store", ""},
		{"graphiql page HEAD", "HEAD", "/graphql", 200, ctHTML, "no-store", ""},
		{"graphiql js", "GET", "/graphql/assets/graphiql@4.1.2/graphiql.min.js", 200, ctJS, "public, max-age=31536000, immutable", ""},
		{"graphiql css", "GET", "/graphql/assets/graphiql@4.1.2/graphiql.min.css", 200, ctCSS, "public, max-age=31536000, immutable", ""},
		{"react", "GET", "/graphql/assets/react@18.3.1/react.production.min.js", 200, ctJS, "public, max-age=31536000, immutable", ""},
		{"react-dom", "GET", "/graphql/assets/react-dom@18.3.1/react-dom.production.min.js", 200, ctJS, "public, max-age=31536000, immutable", ""},
		{"graphiql POST", "POST", "/graphql", 405, ctJSON, "", "method_not_allowed"},
		{"graphiql asset POST", "POST", "/graphql/assets/react@18.3.1/react.production.min.js", 405, ctJSON, "", "method_not_allowed"},
		{"graphiql slash", "GET", "/graphql/", 404, ctJSON, "", "not_found"},
		{"graphiql unknown asset", "GET", "/graphql/assets/react@17.0.0/react.production.min.js", 404, ctJSON, "", "not_found"},
		{"graphiql swagger asset", "GET", "/graphql/assets/swagger-ui-dist@5.35.0/swagger-ui.css", 404, ctJSON, "", "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, tt.method, tt.path, nil)
			if res.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.status, tt.wantStatus, res.body)
			}
			if got := res.header.Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
			}
			if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if tt.wantCache != "" {
				if got := res.header.Get("Cache-Control"); got != tt.wantCache {
					t.Errorf("Cache-Control = %q, want %q", got, tt.wantCache)
				}
			}
			if tt.method == "HEAD" && len(res.body) != 0 {
				t.Errorf("HEAD answered with a %d-byte body", len(res.body))
			}
			if tt.wantStatus == 405 {
				if got := res.header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow = %q, want %q", got, "GET, HEAD")
				}
			}
			if tt.wantErrCode != "" {
				var e map[string]string
				if err := json.Unmarshal(res.body, &e); err != nil {
					t.Fatalf("error body %q is not a JSON object of strings: %v", res.body, err)
				}
				if e["error"] != tt.wantErrCode {
					t.Errorf("error = %q, want %q", e["error"], tt.wantErrCode)
				}
				if e["message"] == "" {
					t.Errorf("error body %q has no message", res.body)
				}
				if len(e) != 2 {
					t.Errorf("error body %q: want exactly the keys error and message", res.body)
				}
			}
		})
	}
}

var (
	refAttr = regexp.MustCompile(`\b(?:src|href|data-spec-url)="([^"]*)"`)
	// An absolute URL, or a scheme-relative one in an attribute or url().
	absoluteURL = regexp.MustCompile(`(?i)\bhttps?:|\b(?:src|href|data-[a-z-]+)=["']?//|url\(["']?//`)
)

// pages lists every HTML page, with how many assets (scripts and
// stylesheets) it must reference.
var pages = []struct {
	path       string
	wantAssets int
}{
	{"/docs", 4},
	{"/docs/", 4},
	{"/graphql", 6},
}

// refs returns the URLs a page refers to, resolved against the page.
func refs(t *testing.T, srv *httptest.Server, pagePath string, html []byte) []*url.URL {
	t.Helper()
	base, err := url.Parse(srv.URL + pagePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []*url.URL
	for _, m := range refAttr.FindAllSubmatch(html, -1) {
		ref := string(m[1])
		if strings.HasPrefix(ref, "data:") {
			continue
		}
		u, err := url.Parse(ref)
		if err != nil {
			t.Fatalf("page %s: bad reference %q: %v", pagePath, ref, err)
		}
		out = append(out, base.ResolveReference(u))
	}
	return out
}

func TestPageReferencesResolve(t *testing.T) {
	srv := newServer(t)
	for _, pg := range pages {
		t.Run(pg.path, func(t *testing.T) {
			page := do(t, srv, "GET", pg.path, nil)
			if page.status != 200 {
				t.Fatalf("status %d", page.status)
			}
			assets := 0
			for _, u := range refs(t, srv, pg.path, page.body) {
				if u.Scheme+"://"+u.Host != srv.URL {
					t.Errorf("%s refers to another host: %s", pg.path, u)
					continue
				}
				res := do(t, srv, "GET", u.RequestURI(), nil)
				if res.status != 200 {
					t.Errorf("%s -> %s: status %d", pg.path, u.Path, res.status)
					continue
				}
				switch path.Ext(u.Path) {
				case ".js", ".css":
					assets++
					want := map[string]string{".js": ctJS, ".css": ctCSS}[path.Ext(u.Path)]
					if got := res.header.Get("Content-Type"); got != want {
						t.Errorf("%s: Content-Type %q, want %q", u.Path, got, want)
					}
					if got := res.header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
						t.Errorf("%s: Cache-Control %q, want immutable", u.Path, got)
					}
					if len(res.body) == 0 {
						t.Errorf("%s: empty", u.Path)
					}
				case ".yaml":
					if !bytes.Equal(res.body, spec) {
						t.Errorf("%s: not the OpenAPI document", u.Path)
					}
				}
			}
			if assets != pg.wantAssets {
				t.Errorf("page references %d scripts and stylesheets, want %d", assets, pg.wantAssets)
			}
		})
	}
}

func TestPagesStayOnThisHost(t *testing.T) {
	srv := newServer(t)
	for _, pg := range pages {
		t.Run(pg.path, func(t *testing.T) {
			page := do(t, srv, "GET", pg.path, nil)
			if m := absoluteURL.Find(page.body); m != nil {
				t.Errorf("page holds an absolute URL: %q", m)
			}
			// Our own init scripts and styles must not reach out either.
			for _, u := range refs(t, srv, pg.path, page.body) {
				if !strings.Contains(u.Path, "/vitola-") {
					continue
				}
				res := do(t, srv, "GET", u.RequestURI(), nil)
				if m := absoluteURL.Find(res.body); m != nil {
					t.Errorf("%s holds an absolute URL: %q", u.Path, m)
				}
			}
		})
	}
}

func TestPageSecurityHeaders(t *testing.T) {
	srv := newServer(t)
	for _, pg := range pages {
		t.Run(pg.path, func(t *testing.T) {
			res := do(t, srv, "GET", pg.path, nil)
			if got := res.header.Get("Referrer-Policy"); got != "no-referrer" {
				t.Errorf("Referrer-Policy = %q", got)
			}
			if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			csp := map[string]string{}
			for _, d := range strings.Split(res.header.Get("Content-Security-Policy"), ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
				csp[name] = value
			}
			for directive, want := range map[string]string{
				"default-src":     "'none'",
				"script-src":      "'self'",
				"connect-src":     "'self'",
				"img-src":         "'self' data:",
				"font-src":        "'self' data:",
				"base-uri":        "'none'",
				"frame-ancestors": "'none'",
			} {
				if csp[directive] != want {
					t.Errorf("CSP %s = %q, want %q", directive, csp[directive], want)
				}
			}
			style := csp["style-src"]
			if !strings.HasPrefix(style, "'self'") || strings.Contains(style, "unsafe") || strings.Contains(style, "http") {
				t.Errorf("CSP style-src = %q, want 'self' and at most a nonce", style)
			}
			if strings.Contains(res.header.Get("Content-Security-Policy"), "unsafe-eval") {
				t.Error("CSP allows unsafe-eval")
			}
		})
	}
}

var nonceAttr = regexp.MustCompile(`data-style-nonce="([A-Za-z0-9+/=_-]{16,})"`)

func TestGraphiQLNonceIsFreshAndMatchesCSP(t *testing.T) {
	srv := newServer(t)
	seen := map[string]bool{}
	for range 3 {
		res := do(t, srv, "GET", "/graphql", nil)
		m := nonceAttr.FindSubmatch(res.body)
		if m == nil {
			t.Fatalf("no style nonce in the page:\n%s", res.body)
		}
		nonce := string(m[1])
		if !strings.Contains(res.header.Get("Content-Security-Policy"), "style-src 'self' 'nonce-"+nonce+"'") {
			t.Errorf("CSP %q does not allow the page's nonce %q", res.header.Get("Content-Security-Policy"), nonce)
		}
		if seen[nonce] {
			t.Errorf("nonce %q served twice", nonce)
		}
		seen[nonce] = true
		if res.header.Get("ETag") != "" {
			t.Error("a page with a nonce has an ETag")
		}
	}
}

func TestOpenAPIServedVerbatim(t *testing.T) {
	input := bytes.Clone(spec)
	h := webui.DocsHandler(input)
	input[0] = 'X' // the handler must have kept its own copy
	srv := httptest.NewServer(h)
	defer srv.Close()

	big := bytes.Repeat([]byte("# padding so that the document gets compressed\n"), 100)
	bigSrv := httptest.NewServer(webui.DocsHandler(big))
	defer bigSrv.Close()

	for _, tt := range []struct {
		name string
		srv  *httptest.Server
		want []byte
		enc  string
	}{
		{"small identity", srv, spec, "identity"},
		{"small gzip asked", srv, spec, "gzip"},
		{"big identity", bigSrv, big, "identity"},
		{"big gzip", bigSrv, big, "gzip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, tt.srv, "GET", "/docs/openapi.yaml", map[string]string{"Accept-Encoding": tt.enc})
			body := res.body
			if res.header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, tt.want) {
				t.Errorf("body = %q, want %q", body, tt.want)
			}
			if got := res.header.Get("Content-Type"); got != ctYAML {
				t.Errorf("Content-Type = %q", got)
			}
		})
	}
}

func TestAssetEncodingAndValidators(t *testing.T) {
	srv := newServer(t)
	const asset = "/docs/assets/swagger-ui-dist@5.35.0/swagger-ui.css"
	plain := do(t, srv, "GET", asset, map[string]string{"Accept-Encoding": "identity"})
	tests := []struct {
		acceptEncoding string
		wantGzip       bool
	}{
		{"identity", false},
		{"gzip", true},
		{"br, gzip;q=0.5", true},
		{"gzip;q=0", false},
		{"*", true},
		{"*, gzip;q=0", false},
	}
	for _, tt := range tests {
		t.Run("Accept-Encoding="+tt.acceptEncoding, func(t *testing.T) {
			hdr := map[string]string{"Accept-Encoding": tt.acceptEncoding}
			res := do(t, srv, "GET", asset, hdr)
			if got := res.header.Get("Content-Encoding") == "gzip"; got != tt.wantGzip {
				t.Fatalf("gzip = %v, want %v", got, tt.wantGzip)
			}
			if got := res.header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary = %q", got)
			}
			body := res.body
			if tt.wantGzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(zr)
			}
			if !bytes.Equal(body, plain.body) {
				t.Error("decoded body differs from the identity body")
			}
			etag := res.header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			hdr["If-None-Match"] = etag
			if again := do(t, srv, "GET", asset, hdr); again.status != http.StatusNotModified {
				t.Errorf("If-None-Match: status %d, want 304", again.status)
			}
		})
	}
}

// TestGraphiQLKeyField: the page offers a key field; with a demo key, the page
// a browser on this machine loads straight from the server comes with it filled
// in, and no other request (another machine, another host name, through a
// proxy, any other path) gets anything of it. The CSP stays as strict.
func TestGraphiQLKeyField(t *testing.T) {
	const demoKey = "vk_0123456789abcdef_SECRETsecretSECRETsecretSECRETsecretSECRETs"
	const secretPart = "SECRETsecretSECRET"
	h := webui.GraphiQLHandler(demoKey)
	get := func(path, remote, host string, header map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr, req.Host = remote, host
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	tests := []struct {
		name, remote, host string
		header             map[string]string
		filled             bool
	}{
		{"localhost", "127.0.0.1:50000", "localhost:8080", nil, true},
		{"127.0.0.1", "127.0.0.1:50000", "127.0.0.1:8080", nil, true},
		{"IPv6 loopback", "[::1]:50000", "[::1]:8080", nil, true},
		{"another machine", "203.0.113.7:50000", "localhost:8080", nil, false},
		{"another host name re-pointed at loopback", "127.0.0.1:50000", "attacker.example:8080", nil, false},
		{"through a proxy on this machine", "127.0.0.1:50000", "localhost:8080", map[string]string{"X-Forwarded-For": "203.0.113.7"}, false},
		{"through a proxy (Forwarded)", "127.0.0.1:50000", "localhost:8080", map[string]string{"Forwarded": "for=203.0.113.7"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := get("/graphql", tt.remote, tt.host, tt.header)
			body := res.Body.String()
			if res.Code != 200 || !strings.Contains(body, `id="vitola-key-input"`) {
				t.Fatalf("no key field in the page (%d):\n%s", res.Code, body)
			}
			if got := strings.Contains(body, `data-demo-key="`+demoKey+`"`); got != tt.filled {
				t.Errorf("demo key in the page: %v, want %v", got, tt.filled)
			}
			if !tt.filled && strings.Contains(body, secretPart) {
				t.Errorf("the page holds part of the demo key:\n%s", body)
			}
			if strings.Contains(res.Header().Get("Content-Security-Policy"), secretPart) || res.Header().Get("ETag") != "" {
				t.Error("the key reached a header, or the page is cacheable")
			}
			if csp := res.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q", csp)
			}
			if inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]| style=| on[a-z]+=`).FindString(body); inline != "" {
				t.Errorf("inline script or style in the page: %q", inline)
			}
		})
	}
	// Nothing else the handler serves holds any of it.
	page := get("/graphql", "127.0.0.1:50000", "localhost:8080", nil)
	for _, m := range regexp.MustCompile(`src="graphql/(assets/[^"]+)"|href="graphql/(assets/[^"]+)"`).FindAllStringSubmatch(page.Body.String(), -1) {
		asset := "/graphql/" + m[1] + m[2]
		if res := get(asset, "127.0.0.1:50000", "localhost:8080", nil); res.Code != 200 || strings.Contains(res.Body.String(), secretPart) {
			t.Errorf("%s: %d, holds the key: %v", asset, res.Code, strings.Contains(res.Body.String(), secretPart))
		}
	}
	for _, path := range []string{"/graphql/", "/graphql/assets/nope.js"} {
		if res := get(path, "127.0.0.1:50000", "localhost:8080", nil); strings.Contains(res.Body.String(), secretPart) {
			t.Errorf("%s holds the key", path)
		}
	}
	// Without a demo key, no page has one.
	if body := do(t, newServer(t), "GET", "/graphql", nil).body; !bytes.Contains(body, []byte(`data-demo-key=""`)) {
		t.Errorf("a page without a demo key: %s", body)
	}
}
