package restshim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/jsonbody"
)

// net/http refuses some requests before any handler sees them, and writes its
// refusal straight to the connection in text: header fields over the
// server's MaxHeaderBytes (431), a malformed request line, a missing or
// repeated Host, a bad header (400), an unknown transfer coding (501), an
// unknown protocol version (505), an Expect other than 100-continue (417).
// No setting or handler changes those answers, so Listener's connections
// recognise them, one whole write in their exact canned form, and write the
// platform's JSON error body instead, with the same status. A handler never
// produces that form: routes answer errors in JSON, the canned texts lack the
// Date header every handler's answer carries, and no route answers 417.

// cannedHeaders follow the status line of every canned refusal but 417's.
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Listener returns ln with net/http's own refusals rewritten as JSON;
// maxHeaderBytes is the server's MaxHeaderBytes, named in the 431's message.
func Listener(ln net.Listener, maxHeaderBytes int) net.Listener {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return &jsonErrorsListener{Listener: ln, maxHeaderBytes: maxHeaderBytes}
}

type jsonErrorsListener struct {
	net.Listener
	maxHeaderBytes int
}

func (l *jsonErrorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorsConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}, nil
}

type jsonErrorsConn struct {
	net.Conn
	maxHeaderBytes int
}

func (c *jsonErrorsConn) Write(p []byte) (int, error) {
	if out := rewriteCanned(p, c.maxHeaderBytes); out != nil {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close after a 431, as it does on TCP.
func (c *jsonErrorsConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteCanned returns the JSON answer for one of net/http's canned
// refusals, or nil when p is not one.
func rewriteCanned(p []byte, maxHeaderBytes int) []byte {
	if len(p) < 16 || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) || (p[9] != '4' && p[9] != '5') {
		return nil
	}
	status, err := strconv.Atoi(string(p[9:12]))
	if err != nil {
		return nil
	}
	line := bytes.IndexByte(p, '\r')
	if line < 0 {
		return nil
	}
	var code, msg string
	switch {
	case bytes.HasPrefix(p[line:], []byte(cannedHeaders)):
		detail := string(p[line+len(cannedHeaders):])
		code, msg = cannedError(status, detail, maxHeaderBytes)
	case status == http.StatusExpectationFailed && bytes.HasSuffix(p, []byte("\r\n\r\n")) && bytes.Contains(p, []byte("\r\nContent-Length: 0\r\n")):
		code, msg = "expectation_failed", "only Expect: 100-continue is supported: send the request without another Expect header"
	default:
		return nil
	}
	body, _ := json.Marshal(apierr.Body{Error: code, Message: msg})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// cannedError names a canned refusal; detail is net/http's text after the
// headers ("400 Bad Request: malformed Host header").
func cannedError(status int, detail string, maxHeaderBytes int) (code, msg string) {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return "headers_too_large", "the request's header fields are larger than " + jsonbody.Size(int64(maxHeaderBytes)) + ": send fewer or smaller headers"
	case http.StatusNotImplemented:
		return "unsupported_transfer_encoding", "the request's Transfer-Encoding is not supported: send a Content-Length, or Transfer-Encoding: chunked"
	case http.StatusHTTPVersionNotSupported:
		return "http_version_not_supported", "this server speaks HTTP/1.1 (and HTTP/1.0): send the request with one of them"
	}
	switch {
	case bytes.HasSuffix([]byte(detail), []byte("missing required Host header")):
		return apierr.CodeBadRequest, "an HTTP/1.1 request needs a Host header"
	case bytes.HasSuffix([]byte(detail), []byte("malformed Host header")):
		return apierr.CodeBadRequest, "the Host header is malformed"
	case bytes.HasSuffix([]byte(detail), []byte("invalid header name")), bytes.HasSuffix([]byte(detail), []byte("invalid header value")):
		return apierr.CodeBadRequest, "a header's name or value holds characters HTTP does not allow"
	}
	if status == http.StatusBadRequest {
		return apierr.CodeBadRequest, "the request is not valid HTTP/1.1: check the request line and the headers (one Host header; no control characters; one Content-Length or Transfer-Encoding)"
	}
	return statusCode(status), "the request could not be read: " + http.StatusText(status)
}
