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
	"strings"
	"sync"

	"github.com/vitolahq/vitola/internal/bufpool"
)

// Transport routes by URL host. Hosts it does not know go to Fallback.
type Transport struct {
	Handlers map[string]http.Handler
	Fallback http.RoundTripper
}

// ServesInProcess reports whether requests for host go to a handler here.
func (t *Transport) ServesInProcess(host string) bool {
	_, ok := t.Handlers[host]
	return ok
}

// Local is a RoundTripper that tells whether it hands a host's requests to a
// handler in this process. Wrapping transports (the internal token's,
// telemetry's) pass the question on to the one they wrap.
type Local interface {
	ServesInProcess(host string) bool
}

// InProcess reports whether rt hands requests for host to a handler in this
// process: a caller of such a host may hand it Go values where a remote one
// gets bytes. A RoundTripper that cannot tell (a test's fault injector, the
// network) does not.
func InProcess(rt http.RoundTripper, host string) bool {
	l, ok := rt.(Local)
	return ok && l.ServesInProcess(host)
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
	if wantsStream(r) {
		return stream(h, r), nil
	}
	w := &recorder{header: http.Header{}}
	h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	body := &Body{buf: w.buf}
	return response(r, w.status, w.header, body, int64(body.Len())), nil
}

// response is the answer a client of the transport gets, as from a server.
func response(r *http.Request, status int, header http.Header, body io.ReadCloser, length int64) *http.Response {
	return &http.Response{
		StatusCode:    status,
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          body,
		ContentLength: length,
		Request:       r,
	}
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

// wantsStream reports a request for a stream of events (GraphQL over SSE: a
// subscription), which a buffered answer would hold back until its end.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// stream runs h for a streamed response: the response returns once h
// flushes (or writes, or returns), and its body reads what h writes next,
// as h writes it. Closing the body fails h's next write; the request's
// context ends h as a client's going away would.
func stream(h http.Handler, r *http.Request) *http.Response {
	pr, pw := io.Pipe()
	w := &streamWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.start()
			pw.Close()
		}()
		h.ServeHTTP(w, r)
	}()
	<-w.ready
	return response(r, w.status, w.sent, pr, -1)
}

// streamWriter hands what a handler writes to a pipe.
type streamWriter struct {
	header http.Header
	sent   http.Header // the header as it was when the response started
	status int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// start lets the response go (once): status and header as they are now.
func (w *streamWriter) start() {
	w.once.Do(func() {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *streamWriter) Write(b []byte) (int, error) {
	w.start()
	return w.pw.Write(b)
}

// Flush sends the response's start; written bytes are never held back.
func (w *streamWriter) Flush() { w.start() }
