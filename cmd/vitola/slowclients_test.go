package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The edges against clients that hold the server: 500 connections that send
// a header and a few bytes of their body and then nothing, a client opening
// more connections than its share, a body framed both by Content-Length and
// by chunks. The real binary on loopback, as `vitola serve` runs.

// stalledRequest is a request cut short: a header announcing 100 bytes of
// body, and 3 of them. Each route reads its body differently (the router, a
// REST route, the payments origin: its headers are the hosted checkout
// page's).
func stalledRequest(path, host, key string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nOrigin: http://" + host + "\r\nX-Vitola-Checkout: 1\r\nx-service-key: " + key + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q"
}

// dialFrom connects to addr from a loopback address of its own (127.0.0.0/8
// is all this machine's), so that a test can be several clients.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	return c
}

func TestSlowClients(t *testing.T) {
	const readTimeout = 4 * time.Second
	data := t.TempDir()
	api, pay := loopbackAddr(t), loopbackAddr(t)
	p := startProc(t, "serve", []string{"serve", "--demo", "--data", data, "--addr", api, "--payments-addr", pay, "--log-format", "json",
		"--read-timeout", readTimeout.String(), "--max-conns-per-client", "120"}, []string{"VITOLA_QUOTA_RPS=0"}, nil)
	waitHealthy(t, p, "http://"+api+"/health")
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))

	t.Run("StalledBodies", func(t *testing.T) {
		// 500 stalled requests from five client addresses, 100 each (under
		// the cap of 120): the router, a REST route and the payments origin.
		type stalled struct {
			conn   net.Conn
			route  string
			status int           // what it was answered, 0: closed unanswered
			code   string        // the error body's code, if any
			closed time.Duration // from the last byte sent to the close
			err    error
		}
		routes := []struct{ path, addr string }{{"/graphql", api}, {"/v1/cigars/resolve", api}, {"/api/v1/payment-sessions/redeem", pay}}
		var all []*stalled
		for i := range 500 {
			rt := routes[i%len(routes)]
			c := dialFrom(t, fmt.Sprintf("127.0.0.%d", 2+i/100), rt.addr)
			t.Cleanup(func() { c.Close() })
			if _, err := io.WriteString(c, stalledRequest(rt.path, rt.addr, key)); err != nil {
				t.Fatalf("stalled request %d: %v", i, err)
			}
			all = append(all, &stalled{conn: c, route: rt.path})
		}
		sent := time.Now()

		// A normal request is answered while all 500 are held.
		req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/v1/cigars/search?q=padron&limit=1", nil)
		req.Header.Set("x-service-key", key)
		start := time.Now()
		res, body := send(t, req)
		took := time.Since(start)
		if res.StatusCode != 200 {
			t.Fatalf("a normal request among 500 stalled ones: %d %s", res.StatusCode, body)
		}
		t.Logf("a normal request among 500 stalled ones answered 200 in %s (the stalled ones are cut after %s)", took.Round(time.Millisecond), readTimeout)
		// Generous: a quiet machine answers in milliseconds.
		if took >= readTimeout {
			t.Errorf("the normal request took %s, as long as the stalled ones are held: it waited on them", took)
		}

		// Every stalled request is answered or closed within the read
		// timeout (counted from its first byte, before sent) and a margin for
		// a busy machine.
		bound := readTimeout + 20*time.Second
		var wg sync.WaitGroup
		for _, s := range all {
			wg.Go(func() {
				s.conn.SetReadDeadline(sent.Add(bound))
				res, err := http.ReadResponse(bufio.NewReader(s.conn), nil)
				if err == nil {
					s.status = res.StatusCode
					var e struct{ Error string }
					b, _ := io.ReadAll(res.Body)
					if json.Unmarshal(b, &e) == nil {
						s.code = e.Error
					}
					if s.code == "" { // GraphQL: {"errors":[{"extensions":{"code"}}]}
						var g struct {
							Errors []struct{ Extensions struct{ Code string } }
						}
						if json.Unmarshal(b, &g) == nil && len(g.Errors) > 0 {
							s.code = g.Errors[0].Extensions.Code
						}
					}
					_, err = s.conn.Read(make([]byte, 1)) // then the connection closes
				}
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					s.err = fmt.Errorf("still open %s after it stalled", bound)
				}
				s.closed = time.Since(sent)
			})
		}
		wg.Wait()
		var slowest time.Duration
		answered := map[string]int{}
		for _, s := range all {
			if s.err != nil {
				t.Fatalf("stalled request to %s: %v", s.route, s.err)
			}
			slowest = max(slowest, s.closed)
			answered[fmt.Sprintf("%s %d %s", s.route, s.status, s.code)]++
		}
		t.Logf("500 stalled requests all closed within %s of their last byte; answers: %v", slowest.Round(time.Millisecond), answered)
		// Each route reads its body, so each is told why: 408.
		for _, want := range []string{"/graphql 408 REQUEST_TIMEOUT", "/v1/cigars/resolve 408 request_timeout", "/api/v1/payment-sessions/redeem 408 request_timeout"} {
			if answered[want] == 0 {
				t.Errorf("no stalled request was answered %q: %v", want, answered)
			}
		}
	})

	t.Run("ConnectionsPerClient", func(t *testing.T) {
		// One address holds its 120 connections (idle: no request yet); the
		// next is refused at once, another address is not.
		var held []net.Conn
		for range 120 {
			held = append(held, dialFrom(t, "127.0.0.9", api))
		}
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		over := dialFrom(t, "127.0.0.9", api)
		defer over.Close()
		io.WriteString(over, "GET /health HTTP/1.1\r\nHost: "+api+"\r\n\r\n")
		over.SetReadDeadline(time.Now().Add(30 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(over), nil)
		if err != nil {
			t.Fatalf("the 121st connection of one address: %v, want a 503", err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 503 || !strings.Contains(string(b), `"error":"too_many_connections"`) || res.Header.Get("Retry-After") == "" {
			t.Fatalf("the 121st connection of one address: %d %v %s, want 503 too_many_connections with Retry-After", res.StatusCode, res.Header, b)
		}
		other := dialFrom(t, "127.0.0.10", api)
		defer other.Close()
		if status := getOn(t, other, api, "/health"); status != 200 {
			t.Fatalf("another address while the first is at its cap: %d", status)
		}
		// A connection closed gives its place back.
		held[0].Close()
		deadline := time.Now().Add(30 * time.Second)
		for {
			c := dialFrom(t, "127.0.0.9", api)
			status := getOn(t, c, api, "/health")
			c.Close()
			if status == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a place given back was not taken again: %d", status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("ChunkedWithContentLength", func(t *testing.T) {
		// RFC 9112 §6.3: answered, then the connection closed.
		c := dialFrom(t, "127.0.0.1", api)
		defer c.Close()
		body := `{"query":"padron 1964"}`
		fmt.Fprintf(c, "POST /v1/cigars/resolve HTTP/1.1\r\nHost: %s\r\nx-service-key: %s\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", api, key, len(body), body)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(c)
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		if res.StatusCode != 200 || !res.Close {
			t.Fatalf("Transfer-Encoding and Content-Length: %d, Connection %q; want it answered and closed", res.StatusCode, res.Header.Get("Connection"))
		}
		if n, err := r.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("after the answer: read %d, %v; want the connection closed", n, err)
		}
	})
}

// getOn sends GET path on c and returns the status (0 when the connection
// failed).
func getOn(t *testing.T, c net.Conn, host, path string) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		return 0
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
