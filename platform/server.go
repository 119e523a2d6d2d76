package platform

import (
	"net"
	"net/http"
	"time"

	restshim "github.com/vitolahq/vitola/rest-shim"
)

// MaxHeaderBytes bounds a request's header fields on every listener: net/http's
// default, made explicit so that the 431 names it.
const MaxHeaderBytes = 1 << 20

// HTTPServer returns the http.Server every listener of the platform runs: both
// public origins, and each component served alone. Serve it with Serve.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: MaxHeaderBytes}
}

// Serve serves srv on ln, with net/http's own refusals (431, a malformed
// request or Host, 501, 505, 417) answered as the platform's JSON error body
// (restshim.Listener) like every other error.
func Serve(srv *http.Server, ln net.Listener) error {
	return srv.Serve(restshim.Listener(ln, srv.MaxHeaderBytes))
}
