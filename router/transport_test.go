package router_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vitolahq/vitola/router"
)

// SubgraphTransport speaks HTTP/1.1 by default and HTTP/2 without TLS with
// h2c, to a server that AcceptH2C made accept both; connections are reused.
func TestSubgraphTransport(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	router.AcceptH2C(srv.Config)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct {
		h2c  bool
		want string
	}{{false, "HTTP/1.1"}, {true, "HTTP/2.0"}} {
		client := &http.Client{Transport: router.SubgraphTransport(tc.h2c)}
		for range 3 {
			res, err := client.Post(srv.URL, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(b) != tc.want {
				t.Fatalf("h2c %v: the server saw %s, want %s", tc.h2c, b, tc.want)
			}
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections for 6 sequential calls over two transports, want 2", n)
	}
}
