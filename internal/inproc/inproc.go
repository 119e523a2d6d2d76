// Package inproc is an http.RoundTripper that hands requests for known hosts
// straight to their handlers: in the one-process shape the router reaches the
// subgraphs without a socket, through the same HTTP handlers (and the same
// internal-token check) that serve them in the scale-out shape.
//
// A response's Body (*Body) holds the whole answer in a buffer that Close gives
// back for reuse. Besides Read it has Bytes() []byte, as bytes.Buffer does: the
// unread rest of the body, valid until Close, for a caller that wants all of
// it without copying it out first.
package inproc

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/vitolahq/vitola/internal/bufpool"
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
	w := &recorder{header: http.Header{}}
	h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	body := &Body{buf: w.buf}
	return &http.Response{
		StatusCode:    w.status,
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          body,
		ContentLength: int64(body.Len()),
		Request:       r,
	}, nil
}

// Body is a response body in memory. Close hands its buffer back for reuse:
// a search page is a dozen kilobytes, garbage once the caller has read it,
// and the garbage of every call is what the collector's time follows.
type Body struct {
	buf *[]byte // nil when empty or closed
	off int     // read position
}

// Bytes returns the unread rest of the body, valid until Close.
func (b *Body) Bytes() []byte {
	if b.buf == nil {
		return nil
	}
	return (*b.buf)[b.off:]
}

// Len is the number of unread bytes.
func (b *Body) Len() int { return len(b.Bytes()) }

func (b *Body) Read(p []byte) (int, error) {
	rest := b.Bytes()
	if len(rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, rest)
	b.off += n
	return n, nil
}

// WriteTo writes the unread rest to w (io.Copy uses it).
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.Bytes())
	b.off += n
	return int64(n), err
}

// Close ends the body: what Bytes returned may be reused afterwards.
func (b *Body) Close() error {
	if b.buf != nil {
		bufpool.Put(b.buf)
		b.buf = nil
	}
	return nil
}

type recorder struct {
	header http.Header
	buf    *[]byte
	status int
}

func (w *recorder) Header() http.Header { return w.header }
func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.buf == nil {
		// A handler that states its length (the subgraphs' transport does)
		// and writes in pieces fills one buffer of that size.
		n := len(b)
		if cl, err := strconv.Atoi(w.header.Get("Content-Length")); err == nil && cl > n {
			n = cl
		}
		w.buf = bufpool.Get(n)
	}
	*w.buf = append(*w.buf, b...)
	return len(b), nil
}
func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
