package platform

import (
	"net"
	"net/http"
	"time"

	"github.com/vitolahq/vitola/internal/connlimit"
	restshim "github.com/vitolahq/vitola/rest-shim"
)

// MaxHeaderBytes bounds a request's header fields on every listener: net/http's
// default, made explicit so that the 431 names it.
const MaxHeaderBytes = 1 << 20

// ServerLimits bound what one client can hold of a listener: a client that
// sends slowly, reads slowly or opens many connections is cut off, never
// served at the others' expense.
type ServerLimits struct {
	// ReadTimeout is the time to read a whole request, header and body, from
	// its first byte: a body still arriving then is answered 408 (when a
	// route is reading it) and its connection closed.
	ReadTimeout time.Duration
	// WriteTimeout is the time a handler has to answer, from the end of the
	// request's header: a client that does not read its answer, or a
	// response still written then, loses the connection. Routes slower by
	// design extend their own (http.ResponseController): the paid image
	// routes to their deadline.
	WriteTimeout time.Duration
	// MaxConnsPerClient caps the connections one client address holds open
	// at once (0: no cap); the next is answered 503 and closed.
	MaxConnsPerClient int
}

// Defaults of ServerLimits: `vitola serve` flags start from these.
const (
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultMaxConnsPerClient = 256
)

// DefaultServerLimits are the limits of every listener unless configured.
func DefaultServerLimits() ServerLimits {
	return ServerLimits{ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, MaxConnsPerClient: DefaultMaxConnsPerClient}
}

// HTTPServer returns the http.Server every listener of the platform runs: both
// public origins, and each component served alone. Serve it with Serve.
func HTTPServer(h http.Handler, lim ServerLimits) *http.Server {
	return &http.Server{Handler: closeAfterChunked(h), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: MaxHeaderBytes}
}

// closeAfterChunked closes the connection after answering an HTTP/1.1
// request whose body came chunked. net/http reads such a body by its chunks
// and drops a Content-Length sent with them, so a handler cannot tell that
// both came; RFC 9112 §6.3 asks a server that processes such a request to
// close the connection after it, because a proxy in front may have framed
// the body differently (request smuggling). Browsers and HTTP clients send
// bodies with a Content-Length, so closing after every chunked one costs
// little.
func closeAfterChunked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// Serve serves srv on ln, with net/http's own refusals (431, a malformed
// request or Host, 501, 505, 417) answered as the platform's JSON error body
// (restshim.Listener) like every other error, and at most maxPerClient
// connections from one client address (0: no cap).
func Serve(srv *http.Server, ln net.Listener, maxPerClient int) error {
	if maxPerClient > 0 {
		ln = connlimit.PerClient(ln, maxPerClient)
	}
	return srv.Serve(restshim.Listener(ln, srv.MaxHeaderBytes))
}
