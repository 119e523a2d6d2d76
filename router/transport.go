package router

import (
	"net"
	"net/http"
	"time"
)

// SubgraphTransport is the transport a router calls its subgraphs with:
// connections kept alive and pooled (enough idle ones per subgraph for the
// resolver's concurrency, so a burst does not end in a storm of new
// connections), no environment proxy, no compression (loopback or a private
// network: gzip costs more CPU than it saves). Plain http:// subgraphs are
// called over HTTP/1.1 by h1Transport, in the calling goroutine; HTTPS ones by
// net/http. With h2c it speaks HTTP/2 without TLS (prior knowledge) to every
// subgraph, which must accept it: Vitola's own subgraph servers do.
func SubgraphTransport(h2c bool) http.RoundTripper {
	t := standardTransport(h2c)
	if h2c {
		return t
	}
	return newH1Transport(t, t.MaxIdleConnsPerHost)
}

// standardTransport is net/http's, tuned as SubgraphTransport says.
func standardTransport(h2c bool) *http.Transport {
	t := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		t.Protocols = &p
	}
	return t
}

// AcceptH2C makes srv accept HTTP/2 without TLS (prior knowledge) besides
// HTTP/1.1, for routers calling with SubgraphTransport(true).
func AcceptH2C(srv *http.Server) {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
}
