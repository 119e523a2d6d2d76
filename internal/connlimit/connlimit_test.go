package connlimit_test

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/connlimit"
)

// Two connections of one address are served; the third is answered 503 and
// closed while the first two stay open; one closed gives its place back, and
// another address was never limited by the first.
func TestPerClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(connlimit.PerClient(ln, 2))
	t.Cleanup(func() { srv.Close() })
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(c net.Conn) int {
		t.Helper()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return 0
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	a, b := dial("127.0.0.2"), dial("127.0.0.2")
	if get(a) != 200 || get(b) != 200 {
		t.Fatal("the first two connections were not served")
	}
	if s := get(dial("127.0.0.2")); s != 503 {
		t.Fatalf("the third connection of one address: %d, want 503", s)
	}
	if s := get(dial("127.0.0.3")); s != 200 {
		t.Fatalf("another address: %d, want 200", s)
	}
	a.Close()
	deadline := time.Now().Add(30 * time.Second)
	for get(dial("127.0.0.2")) != 200 {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's place was not given back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if get(b) != 200 {
		t.Fatal("a connection within the cap stopped being served")
	}
}
