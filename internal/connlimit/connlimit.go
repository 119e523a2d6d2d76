// Package connlimit caps the connections one client address holds open on a
// listener: a client that opens connections and never finishes a request
// holds a goroutine and a socket each, so without a cap one address could
// exhaust the server for everyone.
package connlimit

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/apierr"
)

// Code is the stable error code of the refusal.
const Code = "too_many_connections"

// refuseTime bounds the work spent on a refused connection: writing the
// refusal and reading what the client had sent, so that closing does not
// reset the connection before the client reads the answer.
const refuseTime = 2 * time.Second

// PerClient returns ln accepting at most max connections (max > 0) from one
// client address at once. Past that, a new connection is answered 503
// too_many_connections with Retry-After and closed, and Accept goes on to
// the next: the other clients never wait on it.
func PerClient(ln net.Listener, max int) net.Listener {
	return &listener{Listener: ln, max: max, open: map[netip.Addr]int{}, refusal: refusal(max)}
}

type listener struct {
	net.Listener
	max     int
	refusal []byte
	mu      sync.Mutex
	open    map[netip.Addr]int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientAddr(c.RemoteAddr())
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			go refuse(c, l.refusal)
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &conn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *listener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] <= 1 {
		delete(l.open, ip)
		return
	}
	l.open[ip]--
}

// clientAddr is the connection's remote IP, an IPv4-mapped IPv6 address
// counted as its IPv4 one; the zero Addr for a listener without IPs (one
// count for all, as for one client).
func clientAddr(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// conn gives its place back once, when net/http closes it.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close the connection, as it does on TCP.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// refusal is the whole HTTP answer to a connection over the cap.
func refusal(max int) []byte {
	body, _ := json.Marshal(apierr.Body{Error: Code, Message: fmt.Sprintf(
		"this client address already holds %d open connections, the most one address may: reuse keep-alive connections or close idle ones, then retry", max)})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// refuse answers c with the refusal and closes it, within refuseTime.
func refuse(c net.Conn, answer []byte) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseTime))
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	// Read what the client sent until it closes (or the deadline): closing
	// with unread bytes would reset the connection and could lose the answer.
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}
