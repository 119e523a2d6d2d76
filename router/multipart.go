package router

// Incremental delivery (@defer) over multipart/mixed, in the format Apollo
// Client and Relay's multipart network layers read (deferSpec=20220824): an
// initial payload {data, errors?, hasNext: true}, then parts
// {incremental: [{data, path, label?, errors?}], hasNext}, the last with
// hasNext false. See
// https://github.com/graphql/graphql-over-http/blob/main/rfcs/IncrementalDelivery.md
// and https://github.com/graphql/graphql-spec/pull/742 (the 2022-08-24 state).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// DeferSpec is the incremental delivery format the router serves.
const DeferSpec = "20220824"

// contentTypeMultipart is the Content-Type of an incremental response: Apollo
// Router's, byte for byte, which every client that reads deferSpec=20220824
// knows.
var contentTypeMultipart = []string{`multipart/mixed; boundary="-"; deferSpec=` + DeferSpec}

// Part framing, boundary "-": the response opens with CRLF "---", each part
// is its header and its body, then the delimiter after it, CRLF "---" (or
// CRLF "-----" after the last). The delimiter goes out with the part it
// ends: clients (Apollo Client, meros) take a part only once they read the
// delimiter after it, and would otherwise hold each part until the next.
const (
	partsOpen  = "\r\n---\r\n"
	partHeader = "Content-Type: application/json; charset=utf-8\r\n\r\n"
	partNext   = "\r\n---\r\n"
	partsClose = "\r\n-----\r\n"
)

// acceptsIncremental reports whether a request's Accept allows
// multipart/mixed in the format served (deferSpec=20220824, or no deferSpec
// at all), with a quality above 0. Only the type named: a wildcard does not
// ask for a stream.
func acceptsIncremental(accept []string) bool {
	ok := false
	eachMediaRange(accept, func(typ, params string) {
		if typ != "multipart/mixed" {
			return
		}
		this := true
		eachParam(params, func(k, val string) {
			switch k {
			case "q":
				this = this && quality(val) > 0
			case "deferspec":
				this = this && val == DeferSpec
			}
		})
		ok = ok || this
	})
	return ok
}

// engineFrame is one frame of the engine's deferred response
// (graphql-go-tools v2.18): the newer incremental format, where pending
// announces each fragment by id with its path and label, incremental items
// name their fragment by id (and a subPath below it), and completed closes
// fragments, with errors when one delivered nothing.
type engineFrame struct {
	Data        json.RawMessage `json:"data"`
	Errors      json.RawMessage `json:"errors"`
	Extensions  json.RawMessage `json:"extensions"`
	Pending     []pending       `json:"pending"`
	Incremental []struct {
		ID      string          `json:"id"`
		SubPath []any           `json:"subPath"`
		Data    json.RawMessage `json:"data"`
		Errors  json.RawMessage `json:"errors"`
	} `json:"incremental"`
	Completed []struct {
		ID     string          `json:"id"`
		Errors json.RawMessage `json:"errors"`
	} `json:"completed"`
	HasNext bool `json:"hasNext"`
}

type pending struct {
	ID    string   `json:"id"`
	Path  []string `json:"path"`
	Label string   `json:"label"`
}

// initialPayload and subsequentPayload are the parts the client gets.
type initialPayload struct {
	Data       json.RawMessage `json:"data"`
	Errors     json.RawMessage `json:"errors,omitempty"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
	HasNext    bool            `json:"hasNext"`
}

type subsequentPayload struct {
	Incremental []incrementalItem `json:"incremental,omitempty"`
	HasNext     bool              `json:"hasNext"`
}

type incrementalItem struct {
	Data   json.RawMessage `json:"data"`
	Path   []any           `json:"path"`
	Label  string          `json:"label,omitempty"`
	Errors json.RawMessage `json:"errors,omitempty"`
}

// multipartWriter is the engine's DeferResponseWriter: it gathers a frame's
// bytes until Flush, rewrites the frame into the deferSpec=20220824 format and
// sends it as one part, flushed to the client at once. The response's header
// is written with the first part: until then nothing is committed, and the
// router can still answer an ordinary error.
type multipartWriter struct {
	ctx     context.Context // the operation's
	w       http.ResponseWriter
	rc      *http.ResponseController
	frame   bytes.Buffer
	out     bytes.Buffer
	pending map[string]pending // announced, not completed
	started bool               // the header and a first part are sent
	done    bool               // the last part (hasNext false) is sent
	err     error              // the first write error: the client is gone
}

func newMultipartWriter(ctx context.Context, w http.ResponseWriter) *multipartWriter {
	return &multipartWriter{ctx: ctx, w: w, rc: http.NewResponseController(w), pending: map[string]pending{}}
}

func (m *multipartWriter) Write(p []byte) (int, error) { return m.frame.Write(p) }

// Flush sends the frame written since the last one.
func (m *multipartWriter) Flush() error {
	defer m.frame.Reset()
	if m.err != nil {
		return m.err
	}
	var f engineFrame
	if err := json.Unmarshal(m.frame.Bytes(), &f); err != nil {
		m.err = err
		return err
	}
	var part any
	if !m.started {
		part = initialPayload{Data: f.Data, Errors: f.Errors, Extensions: f.Extensions, HasNext: f.HasNext}
	} else {
		part = m.subsequent(&f)
	}
	for _, p := range f.Pending {
		m.pending[p.ID] = p
	}
	return m.send(part, !f.HasNext)
}

// subsequent rewrites a later frame: each incremental item gets the full
// path of the object it completes, and the label of its fragment; a fragment
// completed with errors and nothing delivered becomes an item with data null
// and those errors.
func (m *multipartWriter) subsequent(f *engineFrame) subsequentPayload {
	out := subsequentPayload{HasNext: f.HasNext}
	for _, it := range f.Incremental {
		p := m.pending[it.ID]
		out.Incremental = append(out.Incremental, incrementalItem{Data: it.Data, Path: fullPath(p.Path, it.SubPath), Label: p.Label, Errors: m.coded(it.Errors)})
	}
	for _, c := range f.Completed {
		p := m.pending[c.ID]
		delete(m.pending, c.ID)
		if len(c.Errors) > 0 && string(c.Errors) != "null" {
			out.Incremental = append(out.Incremental, failedItem(p, m.coded(c.Errors)))
		}
	}
	return out
}

// failedItem is the item of a fragment that delivered nothing: data null, at
// its path (where the engine names it: above any list it is in), with errs.
func failedItem(p pending, errs json.RawMessage) incrementalItem {
	return incrementalItem{Data: json.RawMessage("null"), Path: fullPath(p.Path, nil), Label: p.Label, Errors: errs}
}

// CodeDownstream is the code of an error in a deferred part that came
// without one: a subgraph's fetch failed, or a field it left null was not
// nullable.
const CodeDownstream = "DOWNSTREAM_SERVICE_ERROR"

// coded gives every error of a list a code (extensions.code) if it has none:
// TIMEOUT once the operation's deadline has passed (a fetch it stopped),
// CodeDownstream otherwise.
func (m *multipartWriter) coded(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var errs []map[string]any
	if err := json.Unmarshal(raw, &errs); err != nil {
		return raw
	}
	code := CodeDownstream
	if errors.Is(m.ctx.Err(), context.DeadlineExceeded) {
		code = CodeTimeout
	}
	for _, e := range errs {
		ext, _ := e["extensions"].(map[string]any)
		if ext == nil {
			ext = map[string]any{}
			e["extensions"] = ext
		}
		if c, _ := ext["code"].(string); c == "" {
			ext["code"] = code
		}
	}
	out, err := json.Marshal(errs)
	if err != nil {
		return raw
	}
	return out
}

// fullPath is the response path of the object an incremental item completes:
// the engine gives a fragment's path up to the first list below it, and each
// item's subPath from there (list indices included).
func fullPath(path []string, subPath []any) []any {
	out := make([]any, 0, len(path)+len(subPath))
	for _, n := range path {
		out = append(out, n)
	}
	for _, s := range subPath {
		if f, ok := s.(float64); ok {
			s = int(f)
		}
		out = append(out, s)
	}
	return out
}

// send writes one part, and the closing delimiter after the last.
func (m *multipartWriter) send(part any, last bool) error {
	m.out.Reset()
	if !m.started {
		m.out.WriteString(partsOpen)
	}
	m.out.WriteString(partHeader)
	enc := json.NewEncoder(&m.out)
	enc.SetEscapeHTML(false) // as the engine writes ordinary responses
	if err := enc.Encode(part); err != nil {
		m.err = err
		return err
	}
	m.out.Truncate(m.out.Len() - 1) // Encode's newline
	if last {
		m.out.WriteString(partsClose)
		m.done = true
	} else {
		m.out.WriteString(partNext)
	}
	if !m.started {
		h := m.w.Header()
		h["Content-Type"] = contentTypeMultipart
		h["Cache-Control"] = []string{"no-cache"}
		m.w.WriteHeader(http.StatusOK)
		m.started = true
	}
	if _, err := m.w.Write(m.out.Bytes()); err != nil {
		m.err = err
		return err
	}
	// A writer that cannot flush still gets every part, later.
	if err := m.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		m.err = err
	}
	return m.err
}

// Complete is the engine's end of the response.
func (m *multipartWriter) Complete() {}

// abort ends a stream the engine stopped before its last part (a timeout, a
// failure): every fragment still pending gets an item with data null and
// err, and the response closes. A client that is gone gets nothing.
func (m *multipartWriter) abort(err *gqlerror.Error) {
	if !m.started || m.done || m.err != nil {
		return
	}
	errs, _ := json.Marshal(gqlerror.List{err})
	ids := slices.SortedFunc(maps.Keys(m.pending), func(a, b string) int { // numbers, as strings
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})
	out := subsequentPayload{}
	for _, id := range ids {
		out.Incremental = append(out.Incremental, failedItem(m.pending[id], errs))
	}
	m.send(out, true)
}
