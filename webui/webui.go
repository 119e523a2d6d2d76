// Package webui serves Vitola's browser UIs, fully offline:
//
//   - DocsHandler: interactive API docs (Swagger UI) for an OpenAPI document,
//     mounted at /docs.
//   - GraphiQLHandler: a GraphiQL page for the GraphQL endpoint at /graphql.
//   - CheckoutHandler: the hosted checkout page of the payments origin, at
//     /checkout/{sessionID} (checkout.go; plain JavaScript of our own).
//
// Every script, stylesheet and font the pages use is embedded in the binary
// (see third_party/ and README.md); the pages load nothing from any other
// host, and their Content-Security-Policy forbids it.
//
// Mounting, with a *http.ServeMux:
//
//	docs := webui.DocsHandler(openapiYAML)
//	mux.Handle("/docs", docs)  // the page
//	mux.Handle("/docs/", docs) // the page again, openapi.yaml, assets/...
//
//	graphiql := webui.GraphiQLHandler("") // or the demo key, for --demo
//	mux.Handle("/graphql/assets/", graphiql)
//	// and, in the /graphql endpoint's own handler, for a GET whose Accept
//	// header asks for text/html: graphiql.ServeHTTP(w, r)
//
// Both handlers expect the full request path (no http.StripPrefix). Mount
// them without a method in the pattern: they answer other methods themselves
// with a JSON 405, and unknown paths below their mount point with a JSON 404.
// The pages refer to their assets by relative URLs, so they keep working
// behind a reverse proxy that strips a path prefix.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Versions of the vendored npm packages; each one's files live in
// third_party/<package>@<version>/ (see vendor.sh).
const (
	swaggerUIVersion = "5.35.0"
	graphiQLVersion  = "4.1.2"
	reactVersion     = "18.3.1"
)

// Mount points: the handlers see full request paths below these.
const (
	docsPath    = "/docs"
	graphQLPath = "/graphql"
)

//go:embed static third_party
var files embed.FS

// Content-Security-Policy of the HTML pages. Scripts, styles, fonts, images
// and fetches come from this origin only; data: images and fonts are the
// ones inlined in the vendored CSS. No 'unsafe-inline', no 'unsafe-eval'.
const (
	docsCSP = "default-src 'none'; script-src 'self'; style-src 'self'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// GraphiQL's dialogs (Radix UI) insert a <style> element at run time to
	// lock page scrolling; it carries the page's per-response nonce, which
	// the page hands to the bundle as window.__webpack_nonce__.
	graphiQLCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-" + noncePlaceholder + "'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// noncePlaceholder stands for a fresh random nonce in a page's body and CSP;
// pages that contain it are rendered per response and never cached.
const noncePlaceholder = "VITOLAcspNONCEplaceholder"

const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
	cacheNever      = "no-store"
)

// DocsHandler serves interactive API docs for openapiYAML, an OpenAPI
// document in YAML. Below its mount point /docs it answers:
//
//   - GET /docs and /docs/: the Swagger UI page (HTML)
//   - GET /docs/openapi.yaml: openapiYAML, verbatim
//   - GET /docs/assets/<file>: the page's scripts and styles; their names
//     carry a version or content hash, so they are cached as immutable
//
// HEAD is accepted wherever GET is. The page's Authorize button takes the
// caller's x-service-key (the OpenAPI document's apiKey scheme serviceKey),
// and "Try it out" sends it with every request to this origin.
//
// The handler keeps its own copy of openapiYAML.
func DocsHandler(openapiYAML []byte) http.Handler {
	h := newSite(docsPath)
	css := []string{
		h.vendored("swagger-ui-dist@"+swaggerUIVersion, "swagger-ui.css"),
		h.own("docs.css"),
	}
	js := []string{
		h.vendored("swagger-ui-dist@"+swaggerUIVersion, "swagger-ui-bundle.js"),
		h.own("docs.js"),
	}
	spec := bytes.Clone(openapiYAML)
	h.add(docsPath+"/openapi.yaml", newResource(spec, "application/yaml; charset=utf-8", cacheRevalidate, nil))
	// The page is reachable as /docs and /docs/; its relative URLs differ.
	h.page(docsPath, docsPage, docsCSP, pageData{Base: "docs/", CSS: css, JS: js})
	h.page(docsPath+"/", docsPage, docsCSP, pageData{Base: "", CSS: css, JS: js})
	return h
}

// GraphiQLHandler serves the GraphiQL page for the GraphQL endpoint at
// /graphql. It answers:
//
//   - GET /graphql: the GraphiQL page (HTML, with a fresh CSP nonce in each
//     response, so never cached); it posts queries to the URL it was loaded
//     from, with the developer key of the page's key field (kept in the
//     browser's localStorage) as x-service-key, unless GraphiQL's headers
//     editor sets that header itself. With a demoKey (--demo), a page
//     served straight to a browser on this machine (see onThisMachine)
//     comes with the key field filled in with it; no other response holds
//     anything of it.
//   - GET /graphql/assets/<file>: the page's scripts and styles, cached as
//     immutable like DocsHandler's
//
// HEAD is accepted wherever GET is. The caller routes to it the GET
// /graphql requests that want HTML (Accept: text/html) and everything below
// /graphql/assets/.
func GraphiQLHandler(demoKey string) http.Handler {
	h := newSite(graphQLPath)
	css := []string{
		h.vendored("graphiql@"+graphiQLVersion, "graphiql.min.css"),
		h.own("graphiql.css"),
	}
	js := []string{
		h.vendored("react@"+reactVersion, "react.production.min.js"),
		h.vendored("react-dom@"+reactVersion, "react-dom.production.min.js"),
		h.vendored("graphiql@"+graphiQLVersion, "graphiql.min.js"),
		h.own("graphiql.js"),
	}
	page := h.page(graphQLPath, graphiQLPage, graphiQLCSP, pageData{Base: "graphql/", CSS: css, JS: js, Nonce: noncePlaceholder, DemoKey: demoKeyPlaceholder})
	page.fill = func(r *http.Request, body []byte) []byte {
		key := ""
		if demoKey != "" && onThisMachine(r) {
			key = html.EscapeString(demoKey)
		}
		return bytes.ReplaceAll(body, []byte(demoKeyPlaceholder), []byte(key))
	}
	return h
}

// demoKeyPlaceholder stands for the demo key in the GraphiQL page: each
// response replaces it with the key for a browser on this machine, with
// nothing for anyone else.
const demoKeyPlaceholder = "VITOLAdemoKEYplaceholder"

// onThisMachine reports a request a browser on this machine sent straight to
// this process: from a loopback address, to a loopback host name (so a page
// of another site whose name was re-pointed at 127.0.0.1 does not qualify),
// through no proxy (one on this machine would relay anyone's request from
// loopback).
func onThisMachine(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.Unmap().IsLoopback() {
		return false
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	if strings.EqualFold(strings.TrimSuffix(name, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(name, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// site is a fixed set of resources, keyed by full request path.
type site struct {
	mount  string
	routes map[string]*resource
}

func newSite(mount string) *site {
	return &site{mount: mount, routes: make(map[string]*resource)}
}

func (s *site) add(p string, r *resource) {
	if _, dup := s.routes[p]; dup {
		panic("webui: duplicate route " + p)
	}
	s.routes[p] = r
}

// vendored adds the embedded file third_party/<pkgVersion>/<name> as an
// asset and returns its name below assets/. The package version in the name
// makes it immutable.
func (s *site) vendored(pkgVersion, name string) string {
	body := mustRead("third_party/" + pkgVersion + "/" + name)
	assetName := pkgVersion + "/" + name
	s.add(s.mount+"/assets/"+assetName, newResource(body, contentType(name), cacheImmutable, nil))
	return assetName
}

// own adds the embedded file static/<name> as an asset and returns its name
// below assets/: vitola-<base>.<content hash><ext>, immutable too.
func (s *site) own(name string) string {
	body := mustRead("static/" + name)
	ext := path.Ext(name)
	sum := sha256.Sum256(body)
	assetName := "vitola-" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext
	s.add(s.mount+"/assets/"+assetName, newResource(body, contentType(name), cacheImmutable, nil))
	return assetName
}

// page renders one HTML page at path p.
func (s *site) page(p string, t *template.Template, csp string, data pageData) *resource {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		panic("webui: rendering " + p + ": " + err.Error())
	}
	nonced := strings.Contains(csp, noncePlaceholder)
	cache := cacheRevalidate
	if nonced {
		cache = cacheNever
	}
	res := newResource(buf.Bytes(), "text/html; charset=utf-8", cache, map[string]string{
		"Content-Security-Policy": csp,
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	})
	res.nonced = nonced
	s.add(p, res)
	return res
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, ok := s.routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found",
			fmt.Sprintf("no such page below %s: %s", s.mount, r.URL.Path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("method %s is not allowed on %s; use GET", r.Method, r.URL.Path))
		return
	}
	res.serve(w, r)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", cacheNever)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
}

// resource is one response body with its headers. Bodies of 1 KiB or more
// are also offered gzip-compressed, compressed on first use.
type resource struct {
	body         []byte
	contentType  string
	cacheControl string
	etag         string
	header       map[string]string
	nonced       bool // body and headers hold noncePlaceholder
	// fill, when set, completes a nonced body for the request at hand.
	fill func(r *http.Request, body []byte) []byte

	gzipOnce sync.Once
	gzipBody []byte // nil when compression does not pay
}

const minGzipSize = 1024

func newResource(body []byte, contentType, cacheControl string, header map[string]string) *resource {
	sum := sha256.Sum256(body)
	return &resource{
		body:         body,
		contentType:  contentType,
		cacheControl: cacheControl,
		etag:         hex.EncodeToString(sum[:16]),
		header:       header,
	}
}

func (res *resource) compressible() bool { return !res.nonced && len(res.body) >= minGzipSize }

func (res *resource) gzipped() []byte {
	res.gzipOnce.Do(func() {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return
		}
		if _, err := zw.Write(res.body); err != nil {
			return
		}
		if err := zw.Close(); err != nil {
			return
		}
		if buf.Len() < len(res.body) {
			res.gzipBody = buf.Bytes()
		}
	})
	return res.gzipBody
}

func (res *resource) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", res.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", res.cacheControl)
	if res.nonced {
		// A nonce must not be reused: a fresh one per response, and neither
		// a validator nor caching (cacheControl is no-store).
		nonce := rand.Text()
		for k, v := range res.header {
			h.Set(k, strings.ReplaceAll(v, noncePlaceholder, nonce))
		}
		body := bytes.ReplaceAll(res.body, []byte(noncePlaceholder), []byte(nonce))
		if res.fill != nil {
			body = res.fill(r, body)
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		return
	}
	for k, v := range res.header {
		h.Set(k, v)
	}
	body, etag := res.body, res.etag
	if res.compressible() {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			if gz := res.gzipped(); gz != nil {
				body, etag = gz, etag+"-gzip"
				h.Set("Content-Encoding", "gzip")
			}
		}
	}
	h.Set("ETag", `"`+etag+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header value allows gzip.
func acceptsGzip(accept string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, part := range strings.Split(accept, ",") {
		coding, params, _ := strings.Cut(part, ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			gzipQ = q
		case "*":
			starQ = q
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	panic("webui: no content type for " + name)
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("webui: missing embedded file: " + err.Error())
	}
	return b
}

// pageData fills a page template. Base is the relative URL of the mount
// point's directory as seen from the page ("docs/" for /docs, "" for
// /docs/); CSS and JS are asset names in load order; Nonce, if set, is the
// style nonce handed to the page's scripts; DemoKey, GraphiQL's key to fill
// in (a placeholder each response replaces).
type pageData struct {
	Base    string
	CSS     []string
	JS      []string
	Nonce   string
	DemoKey string
}

var docsPage = template.Must(template.New("docs").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Vitola API reference</title>
<link rel="icon" href="data:,">
{{- range .CSS}}
<link rel="stylesheet" href="{{$.Base}}assets/{{.}}">
{{- end}}
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document itself is at <a href="{{.Base}}openapi.yaml">openapi.yaml</a>.</noscript>
<div id="swagger-ui" data-spec-url="{{.Base}}openapi.yaml"></div>
{{- range .JS}}
<script src="{{$.Base}}assets/{{.}}"></script>
{{- end}}
</body>
</html>
`))

var graphiQLPage = template.Must(template.New("graphiql").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Vitola GraphQL</title>
<link rel="icon" href="data:,">
{{- range .CSS}}
<link rel="stylesheet" href="{{$.Base}}assets/{{.}}">
{{- end}}
</head>
<body>
<noscript>GraphiQL needs JavaScript. Send queries to this URL with POST instead.</noscript>
<form id="vitola-key" autocomplete="off">
<label for="vitola-key-input">Developer key <span>(sent as <code>x-service-key</code>; kept in this browser)</span></label>
<input id="vitola-key-input" name="key" type="password" spellcheck="false" placeholder="vk_… from vitola keys create --name me, or data/demo-key.txt">
<button type="submit">Use key</button>
<button type="button" id="vitola-key-forget">Forget</button>
<output id="vitola-key-note" for="vitola-key-input"></output>
</form>
<div id="graphiql" data-style-nonce="{{.Nonce}}" data-demo-key="{{.DemoKey}}"></div>
{{- range .JS}}
<script src="{{$.Base}}assets/{{.}}"></script>
{{- end}}
</body>
</html>
`))
