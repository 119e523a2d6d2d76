package router

// GraphQL over HTTP (https://graphql.github.io/graphql-over-http/draft/): the
// media type a response is answered in, the status a failed request gets in
// it, and the request read from a POST body or from GET's URL parameters.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/jsonbody"
)

// The media types a GraphQL response is answered in.
const (
	// MediaGraphQLResponse is the specification's own: a request that fails
	// before execution answers 4xx in it.
	MediaGraphQLResponse = "application/graphql-response+json"
	// MediaJSON is what older clients know: every well-formed request answers
	// 200 in it, errors or not, as the specification recommends.
	MediaJSON = "application/json"
)

// CodeNotAcceptable is the code of a request whose Accept names neither
// media type.
const CodeNotAcceptable = "NOT_ACCEPTABLE"

// negotiate picks the response's media type from the request's Accept
// values, by quality: each of the two media types takes the quality of the
// most specific range that matches it (the type itself, then application/*,
// then */*), q=0 refusing it. At equal quality application/graphql-response+json
// wins only when the client named it: a wildcard alone (*/*) gets
// application/json, which every client understands. No Accept (or an empty
// one) means application/json. A range with a charset other than UTF-8 does
// not match. ok is false when neither type is acceptable (406).
func negotiate(accept []string) (media string, ok bool) {
	type match struct {
		q           float64
		specificity int // 0 none, 1 */*, 2 application/*, 3 the type
	}
	var gql, js match
	seen := false
	eachMediaRange(accept, func(typ, params string) {
		seen = true
		q, charsetOK := 1.0, true
		eachParam(params, func(k, val string) {
			switch k {
			case "q":
				q = quality(val)
			case "charset":
				charsetOK = strings.EqualFold(val, "utf-8") || strings.EqualFold(val, "utf8")
			}
		})
		if !charsetOK {
			return
		}
		consider := func(m *match, name string) {
			s := 0
			switch typ {
			case name:
				s = 3
			case "application/*":
				s = 2
			case "*/*":
				s = 1
			}
			if s > m.specificity {
				*m = match{q: q, specificity: s}
			}
		}
		consider(&gql, MediaGraphQLResponse)
		consider(&js, MediaJSON)
	})
	switch {
	case !seen:
		return MediaJSON, true
	case gql.q == 0 && js.q == 0:
		return "", false
	case gql.q > js.q, gql.q == js.q && gql.specificity == 3:
		return MediaGraphQLResponse, true
	default:
		return MediaJSON, true
	}
}

// eachMediaRange calls f with each media range of Accept values: its type
// in lower case, and its parameters as written (see eachParam).
func eachMediaRange(accept []string, f func(typ, params string)) {
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			typ, params, _ := strings.Cut(part, ";")
			f(strings.ToLower(strings.TrimSpace(typ)), params)
		}
	}
}

// eachParam calls f with each parameter of a media range: its name in lower
// case, its value unquoted.
func eachParam(params string, f func(name, value string)) {
	for _, p := range strings.Split(params, ";") {
		k, val, _ := strings.Cut(p, "=")
		f(strings.ToLower(strings.TrimSpace(k)), strings.Trim(strings.TrimSpace(val), `"`))
	}
}

// quality reads a q parameter; one that is not a number from 0 to 1 is 0.
func quality(v string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return 0
	}
	return f
}

// wantsPage reports a browser asking for a page (GraphiQL) rather than a
// GraphQL response: its Accept names text/html and neither JSON type.
func wantsPage(r *http.Request) bool {
	accept := strings.ToLower(strings.Join(r.Header.Values("Accept"), ","))
	return strings.Contains(accept, "text/html") && !strings.Contains(accept, "json")
}

// responder answers one request in its negotiated media type.
type responder struct {
	w     http.ResponseWriter
	media string
}

// Content-Type values, made once: a header's value slices are only ever
// replaced, never written into, so every response may share them.
var (
	contentTypeGraphQLResponse = []string{MediaGraphQLResponse + "; charset=utf-8"}
	contentTypeJSON            = []string{MediaJSON + "; charset=utf-8"}
)

func (rs responder) contentType() []string {
	if rs.media == MediaGraphQLResponse {
		return contentTypeGraphQLResponse
	}
	return contentTypeJSON
}

// errors answers GraphQL errors with an HTTP status of their own: the request
// was not well-formed, not allowed, or the server failed.
func (rs responder) errors(status int, errs ...*gqlerror.Error) {
	for _, e := range errs { // the engine's messages repeat names whole
		e.Message = apierr.ClipQuoted(e.Message)
	}
	rs.w.Header()["Content-Type"] = rs.contentType()
	rs.w.WriteHeader(status)
	json.NewEncoder(rs.w).Encode(map[string]any{"errors": errs})
}

// failed answers a well-formed request that failed before execution (parse,
// validation, variables, limits): 400 in application/graphql-response+json,
// 200 in application/json, whose older clients read errors only from a 200.
func (rs responder) failed(errs ...*gqlerror.Error) {
	status := http.StatusOK
	if rs.media == MediaGraphQLResponse {
		status = http.StatusBadRequest
	}
	rs.errors(status, errs...)
}

// data answers an executed operation's response, with its length: the
// server then never chunks it, whatever its size.
func (rs responder) data(body []byte) {
	h := rs.w.Header()
	h["Content-Type"] = rs.contentType()
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rs.w.Write(body)
}

// gqlRequest is one GraphQL-over-HTTP request's parameters.
type gqlRequest struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
	// DocumentID names a persisted document instead of Query (the GraphQL
	// over HTTP persisted documents proposal).
	DocumentID string `json:"documentId"`
}

// getParams are the URL parameters a GET request may carry; each at most once.
var getParams = []string{"query", "operationName", "variables", "extensions", "documentId"}

// bodyFromURL turns a GET request's URL parameters into the JSON body a POST
// would send, so that both go through the same checks: the same byte, token
// and nesting limits, the same decoding. A parameter given twice, or one the
// router does not know, is refused like a member twice in a body. Values of
// variables and extensions must be JSON (URL-encoded).
func bodyFromURL(rawQuery string) ([]byte, error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, errors.New("the URL's parameters are not URL-encoded")
	}
	out := map[string]any{}
	for name, vs := range vals {
		if !slices.Contains(getParams, name) {
			return nil, fmt.Errorf("unknown URL parameter %s (want query, operationName, variables, extensions or documentId)", apierr.Quote(name))
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("the URL parameter %q is given %d times", name, len(vs))
		}
		v := vs[0]
		switch name {
		case "variables", "extensions":
			if !json.Valid([]byte(v)) {
				return nil, fmt.Errorf("the URL parameter %q must be a JSON object", name)
			}
			out[name] = json.RawMessage(v)
		default:
			out[name] = v
		}
	}
	return json.Marshal(out)
}

// decodeRequest decodes a request body strictly (one JSON value, no member
// twice, names as spelt; members the router does not know are allowed) and
// checks each parameter's JSON type: variables and extensions are objects or
// null. Its error is the client's, for a 400.
//
// maxNesting is the request's JSON nesting limit (limits.Config.MaxNesting,
// --max-nesting), which CheckRequestJSON has already enforced on the same
// bytes, over GET and POST alike: the decoder's own depth bound (32 by default)
// must not refuse what that limit allows. Its depth counts the request's own
// object, the limit does not.
func decodeRequest(body []byte, maxNesting int) (gqlRequest, error) {
	var req gqlRequest
	if err := (jsonbody.Rules{AllowUnknownFields: true, MaxDepth: maxNesting + 1}).Decode(body, &req); err != nil {
		return req, errors.New("the body must be one JSON object with query, operationName, variables and extensions: " + err.Error())
	}
	for name, raw := range map[string]json.RawMessage{"variables": req.Variables, "extensions": req.Extensions} {
		if len(raw) > 0 && string(raw) != "null" && raw[0] != '{' {
			return req, fmt.Errorf("%s must be a JSON object", name)
		}
	}
	return req, nil
}

// readBody reads a POST body within limit into buf; a larger one is a
// *http.MaxBytesError. A declared length sizes buf at once (never beyond the
// limit: the length is the client's word).
func readBody(buf *bytes.Buffer, w http.ResponseWriter, r *http.Request, limit int64) error {
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to read the EOF too
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return err
}
