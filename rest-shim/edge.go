package restshim

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/vitolahq/vitola/internal/apierr"
)

// Every answer of both origins is the platform's JSON error body when it is an
// error, whoever wrote it: a route, the ServeMux (redirects to a cleaned path,
// 405, 404), a file server below a route, or net/http itself before any
// handler (listener.go). GraphQL's own path answers in GraphQL's shape.

// routes registers a origin's handlers on its mux, marked as routes, so that
// the edge tells them from the mux's own answers.
type routes struct{ mux *http.ServeMux }

// route is a handler the platform registered.
type route struct{ http.Handler }

func (rs routes) Handle(pattern string, h http.Handler) { rs.mux.Handle(pattern, route{h}) }

func (rs routes) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	rs.Handle(pattern, http.HandlerFunc(f))
}

// Codes of the edge's own answers.
const (
	codePathNotCanonical = "path_not_canonical"
	codeMoved            = "moved"
)

// edge serves an origin's mux. A request for a route goes to it, its non-JSON
// errors made JSON (errorWriter). Anything else gets the mux's verdict in
// JSON: a path with "..", "." or "//" segments, or without the slash a subtree
// needs, is a 308 to the canonical path (method and body kept); a known path
// with another method is a 405 listing Allow; the rest is a 404.
func edge(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RequestURI == "*" { // "OPTIONS *" is answered by net/http itself
			apierr.Write(w, http.StatusBadRequest, apierr.CodeBadRequest, "the request target * is only for OPTIONS; name a path")
			return
		}
		h, _ := mux.Handler(r)
		if _, ok := h.(route); ok {
			mux.ServeHTTP(&errorWriter{ResponseWriter: w, r: r}, r)
			return
		}
		// The mux's own answer: see what it would say, then say it in JSON.
		verdict := headerRecorder{header: http.Header{}}
		h.ServeHTTP(&verdict, r)
		switch {
		case verdict.status == http.StatusMethodNotAllowed:
			allow := verdict.header.Get("Allow")
			w.Header().Set("Allow", allow)
			apierr.Write(w, http.StatusMethodNotAllowed, apierr.CodeMethodNotAllowed,
				fmt.Sprintf("method %s is not allowed on %s: use %s", r.Method, target(r), allow))
		case verdict.status >= 300 && verdict.status < 400:
			redirectCanonical(w, r, verdict.header.Get("Location"))
		default:
			writeNotFound(w, r)
		}
	})
}

// redirectCanonical answers a path not in canonical form (".", ".." or empty
// segments, a directory without its slash, a file server's index.html) with a
// 308 path_not_canonical to loc, where the mux or a file server below a route
// sends it: a 308 keeps the method and the body, where their 301 does not.
func redirectCanonical(w http.ResponseWriter, r *http.Request, loc string) {
	loc = localLocation(r, loc)
	w.Header().Set("Location", loc)
	msg := "the path is not in canonical form (no empty, '.' or '..' segments): the resource is at " + apierr.Clip(loc)
	if strings.TrimSuffix(strings.SplitN(loc, "?", 2)[0], "/") == r.URL.Path {
		msg = "this path takes a trailing slash: the resource is at " + apierr.Clip(loc)
	}
	w.Header().Del("Content-Length") // of the body a file server meant to write
	apierr.Write(w, http.StatusPermanentRedirect, codePathNotCanonical, msg)
}

// localLocation keeps a redirect on this origin: the path and query of where
// it sends (relative to the request, as a file server's are), never a host
// the request named.
func localLocation(r *http.Request, loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "/"
	}
	u = r.URL.ResolveReference(u)
	if !strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
		return "/"
	}
	out := &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
	return out.String()
}

func writeNotFound(w http.ResponseWriter, r *http.Request) {
	apierr.Write(w, http.StatusNotFound, apierr.CodeNotFound, "no route "+r.Method+" "+target(r)+": see /docs for the API")
}

// target is what a request asked for: its path, or the authority a CONNECT
// names.
func target(r *http.Request) string {
	if r.URL.Path == "" {
		return apierr.Clip(r.RequestURI)
	}
	return apierr.Clip(r.URL.Path)
}

// headerRecorder keeps what a handler answers, without its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}
func (h *headerRecorder) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return len(p), nil
}

// errorWriter makes an error a route's handler answers in another format
// (http.Error's text, a file server's HTML redirect) the platform's JSON, on
// the same status and with the same headers otherwise (Allow, Location,
// WWW-Authenticate). Routes answer JSON themselves; this catches what
// library code below them writes.
type errorWriter struct {
	http.ResponseWriter
	r         *http.Request
	wrote     bool
	swallowed bool // the handler's own body is dropped
	page      bool // the route answers a page for people (ownPage)
}

// ownPage tells the edge that the answer w is about to write is the route's
// own page for a person in a browser (the OAuth sign-in and error pages): it
// says what went wrong in words, and JSON in its place would not.
func ownPage(w http.ResponseWriter) {
	for {
		switch x := w.(type) {
		case *errorWriter:
			x.page = true
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

func (w *errorWriter) WriteHeader(status int) {
	if w.wrote || status < 200 {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.wrote = true
	if (isRedirect(status) || status >= 400) && !w.page {
		if !isJSONType(w.Header().Get("Content-Type")) {
			w.swallowed = true
			if status == http.StatusMovedPermanently {
				// net/http's path-cleaning redirect (the file server's).
				redirectCanonical(w.ResponseWriter, w.r, w.Header().Get("Location"))
				return
			}
			writeStatusError(w.ResponseWriter, w.r, status)
			return
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *errorWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallowed {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush lets streaming handlers flush through the wrapper.
func (w *errorWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.swallowed {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *errorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// isJSONType: application/json or any +json type (problem+json, the GraphQL
// response type).
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// writeStatusError answers status with the error body that fits it: GraphQL's
// shape on /graphql, the REST body elsewhere.
func writeStatusError(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	code, msg := statusCode(status), "the request failed: "+strings.ToLower(http.StatusText(status))
	switch {
	case status == http.StatusNotFound:
		msg = "no route " + r.Method + " " + target(r) + ": see /docs for the API"
	case isRedirect(status):
		code, msg = codeMoved, "the resource is at "+apierr.Clip(h.Get("Location"))+": follow the Location header"
	case status >= 500:
		msg = "the request could not be served; try again shortly"
	}
	if r.URL.Path == "/graphql" || strings.HasPrefix(r.URL.Path, "/graphql/") {
		h.Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{
			"message": msg, "extensions": map[string]any{"code": strings.ToUpper(code)}}}})
		return
	}
	apierr.Write(w, status, code, msg)
}

// statusCode is the stable code of an error the platform did not name itself.
func statusCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return apierr.CodeBadRequest
	case http.StatusUnauthorized:
		return apierr.CodeUnauthorized
	case http.StatusForbidden:
		return apierr.CodeForbidden
	case http.StatusNotFound:
		return apierr.CodeNotFound
	case http.StatusMethodNotAllowed:
		return apierr.CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return "body_too_large"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return apierr.CodeUnavailable
	}
	if status >= 500 {
		return apierr.CodeInternal
	}
	text := http.StatusText(status)
	if text == "" {
		return apierr.CodeBadRequest
	}
	return strings.ReplaceAll(strings.ToLower(strings.ReplaceAll(text, "-", " ")), " ", "_")
}
