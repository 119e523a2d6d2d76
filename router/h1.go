package router

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// h1Transport calls subgraphs over plain HTTP/1.1 with keep-alive, each
// request written and its response read by the goroutine that sends it.
// net/http's Transport runs two goroutines per connection (one writes, one
// reads, even while the connection is idle) and hands every request and
// response between them and the caller: on a router whose work is mostly
// small subgraph calls, those hand-offs, their wake-ups and their allocations
// were the largest part of a call's cost beside the system calls themselves.
//
// Without a reader on idle connections it cannot see a server close one (a
// keep-alive timeout, a restart), so it sends only requests that can be sent
// again: a GraphQL query's fetches (the executor marks them, see
// withReplayable), GET and HEAD, or requests with an Idempotency-Key, each
// with a body it can rewind. A reused connection that fails before any byte of
// the response came is then retried once on a new one. It handles only
// http:// URLs and bodies of a known length (the engine's are). Anything else
// (a mutation's fetches, HTTPS) goes to fallback, net/http's.
type h1Transport struct {
	dialer   net.Dialer
	fallback http.RoundTripper
	// maxIdle bounds the idle connections kept per host.
	maxIdle     int
	maxIdleTime time.Duration

	mu   sync.Mutex
	idle map[string][]*h1Conn // by host:port, the most recently used last
}

// maxIdleTime is how long an idle connection may be reused: a little less
// than common servers' keep-alive timeouts (Go's and nginx's are longer), so
// that few reuses meet a connection the server closed.
const maxIdleTime = 15 * time.Second

type replayableKey struct{}

// withReplayable marks ctx's subgraph requests as safe to send twice: the
// fetches of a GraphQL query, which reads only.
func withReplayable(ctx context.Context) context.Context {
	return context.WithValue(ctx, replayableKey{}, true)
}

func newH1Transport(fallback http.RoundTripper, maxIdle int) *h1Transport {
	return &h1Transport{
		dialer:      net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		fallback:    fallback,
		maxIdle:     maxIdle,
		maxIdleTime: maxIdleTime,
		idle:        map[string][]*h1Conn{},
	}
}

type h1Conn struct {
	t      *h1Transport
	addr   string
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	// got counts the bytes read for the current request's response: none
	// means the server answered nothing (closed, or reset, the connection).
	got int
}

// connReader reads c's connection, counting (c.got).
type connReader struct{ c *h1Conn }

func (r connReader) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	r.c.got += n
	return n, err
}

// handles reports whether h1Transport sends req itself.
func handles(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.ContentLength <= 0 || req.GetBody == nil) {
		return false // a length unknown (chunked), or a body it could not send again
	}
	if len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 || req.Header.Get("Upgrade") != "" {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead:
		return true
	}
	if req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "" {
		return true
	}
	replayable, _ := req.Context().Value(replayableKey{}).(bool)
	return replayable
}

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !handles(req) {
		return t.fallback.RoundTrip(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		c, reused, err := t.conn(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(ctx, req)
		if err == nil {
			return resp, nil
		}
		var f *h1Failure
		if errors.As(err, &f) && reused && attempt == 0 && ctx.Err() == nil && f.serverClosed() {
			if req.Body != nil && req.Body != http.NoBody {
				body, gerr := req.GetBody()
				if gerr != nil {
					return nil, err
				}
				req = req.Clone(ctx) // the caller's request is not ours to change
				req.Body = body
			}
			continue
		}
		return nil, err
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// h1Failure is a round trip that failed before any byte of a response came.
type h1Failure struct{ err error }

func (f *h1Failure) Error() string { return f.err.Error() }
func (f *h1Failure) Unwrap() error { return f.err }

// serverClosed reports the failure of a connection the server had closed or
// reset (http.ReadResponse calls an end before the status line unexpected).
func (f *h1Failure) serverClosed() bool {
	return errors.Is(f.err, io.EOF) || errors.Is(f.err, io.ErrUnexpectedEOF) || errors.Is(f.err, syscall.ECONNRESET) || errors.Is(f.err, syscall.EPIPE)
}

// conn takes an idle connection to addr, or dials one.
func (t *h1Transport) conn(ctx context.Context, addr string) (*h1Conn, bool, error) {
	now := time.Now()
	t.mu.Lock()
	for list := t.idle[addr]; len(list) > 0; list = t.idle[addr] {
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		if now.Sub(c.idleAt) < t.maxIdleTime {
			t.mu.Unlock()
			return c, true, nil
		}
		c.nc.Close() // every one below it is older still
		for _, old := range t.idle[addr] {
			old.nc.Close()
		}
		clear(t.idle[addr])
		t.idle[addr] = t.idle[addr][:0]
	}
	t.mu.Unlock()
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	c := &h1Conn{t: t, addr: addr, nc: nc, bw: bufio.NewWriterSize(nc, 4<<10)}
	c.br = bufio.NewReaderSize(connReader{c}, 4<<10)
	return c, false, nil
}

// release puts a connection whose response was read whole back in the pool.
func (t *h1Transport) release(c *h1Conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	list := t.idle[c.addr]
	if len(list) >= t.maxIdle {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	t.idle[c.addr] = append(list, c)
	t.mu.Unlock()
}

// CloseIdleConnections closes the pooled connections (http.Client calls it).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// aLongTimeAgo is a deadline that makes any blocked I/O return at once.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip sends req on c and reads the response's header; the body is read
// by the caller, after which c goes back to the pool (see h1Body). Any error
// closes c. Until the body is closed, ctx ending interrupts the I/O.
func (c *h1Conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) error {
		stop()
		c.nc.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return err
	}
	c.got = 0
	if err := c.writeRequest(req); err != nil {
		return nil, fail(&h1Failure{err: err})
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			if c.got == 0 {
				err = &h1Failure{err: err}
			}
			return nil, fail(err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			return nil, fail(errors.New("the subgraph switched protocols unasked"))
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
		resp.Body.Close() // an informational response: the final one follows
	}
	resp.Body = &h1Body{c: c, rc: resp.Body, stop: stop, close: resp.Close || asksToClose(req)}
	return resp, nil
}

// writeRequest writes req's head and body and flushes them: one write for a
// body that fits the buffer.
func (c *h1Conn) writeRequest(req *http.Request) error {
	defer closeBody(req)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validHeaderValue(host) {
		return fmt.Errorf("invalid Host %q", host)
	}
	w := c.bw
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if req.Header.Get("User-Agent") == "" {
		w.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody || (method != http.MethodGet && method != http.MethodHead) {
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.FormatInt(max(req.ContentLength, 0), 10))
		w.WriteString("\r\n")
	}
	if asksToClose(req) {
		w.WriteString("Connection: close\r\n")
	}
	for name, values := range req.Header {
		switch http.CanonicalHeaderKey(name) {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection":
			continue // written above, or not this transport's to send
		}
		if !validHeaderName(name) {
			return fmt.Errorf("invalid header name %q", name)
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return fmt.Errorf("invalid value of header %s", name)
			}
			w.WriteString(name)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
	if hasBody {
		n, err := io.Copy(w, req.Body)
		if err != nil {
			c.bw.Reset(c.nc)
			return err
		}
		if n != req.ContentLength {
			c.bw.Reset(c.nc)
			return fmt.Errorf("the request body was %d bytes, not its Content-Length %d", n, req.ContentLength)
		}
	}
	return w.Flush()
}

// asksToClose reports a request that wants its connection closed after it
// (Request.Close, or its own Connection: close).
func asksToClose(req *http.Request) bool {
	if req.Close {
		return true
	}
	for _, v := range req.Header["Connection"] {
		for _, token := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), "close") {
				return true
			}
		}
	}
	return false
}

// validHeaderName: a token (RFC 9110), so no header can be smuggled in.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '!' || b == '#' || b == '$' || b == '%' || b == '&' || b == '\'' || b == '*' || b == '+' || b == '-' || b == '.' || b == '^' || b == '_' || b == '`' || b == '|' || b == '~':
		default:
			return false
		}
	}
	return true
}

// validHeaderValue: no control character but tab (no CR or LF to end the
// header early).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// h1Body is a response body; read to its end and closed, its connection goes
// back to the pool, closed early it is closed.
type h1Body struct {
	c      *h1Conn
	rc     io.ReadCloser
	stop   func() bool
	close  bool // the connection must not be reused
	eof    bool
	closed bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("read on a closed response body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	// stop is false when ctx ended and poisoned the connection's deadline.
	if b.stop() && b.eof && !b.close && b.c.br.Buffered() == 0 {
		b.c.t.release(b.c)
		return nil
	}
	b.c.nc.Close()
	return nil
}
