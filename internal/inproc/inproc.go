// Package inproc is an http.RoundTripper that hands requests for known hosts
// straight to their handlers: in the one-process shape the router reaches the
// subgraphs without a socket, through the same HTTP handlers (and the same
// internal-token check) that serve them in the scale-out shape.
package inproc

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Transport routes by URL host. Hosts it does not know go to Fallback.
type Transport struct {
	Handlers map[string]http.Handler
	Fallback http.RoundTripper
}

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	h, ok := t.Handlers[r.URL.Host]
	if !ok {
		if t.Fallback != nil {
			return t.Fallback.RoundTrip(r)
		}
		return nil, fmt.Errorf("inproc: no handler for host %q", r.URL.Host)
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	w := getRecorder()
	h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	// The response owns a copy: the recorder goes back to the pool.
	body := bytes.Clone(w.buf.Bytes())
	res := &http.Response{
		StatusCode:    w.status,
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
	putRecorder(w)
	return res, nil
}

type recorder struct {
	header http.Header
	buf    bytes.Buffer
	status int
}

func (w *recorder) Header() http.Header { return w.header }
func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(b)
}
func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

var pool = sync.Pool{New: func() any { return &recorder{} }}

func getRecorder() *recorder {
	w := pool.Get().(*recorder)
	w.header = http.Header{} // handed to the response: never reused
	w.buf.Reset()
	w.status = 0
	return w
}

func putRecorder(w *recorder) {
	if w.buf.Cap() > 1<<20 { // do not keep huge buffers alive
		return
	}
	pool.Put(w)
}
