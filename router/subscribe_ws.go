package router

// GraphQL over WebSocket, the graphql-transport-ws protocol (the graphql-ws
// npm library's): connection_init carries the credentials a request carries
// in its headers (x-service-key, Authorization: Bearer ...), then each
// subscribe message is one operation, admitted exactly as a request is,
// whose results come as next messages and whose end as complete.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/telemetry"
)

// SubprotocolGraphQLWS is the WebSocket subprotocol of graphql-transport-ws.
const SubprotocolGraphQLWS = "graphql-transport-ws"

// Close codes (graphql-transport-ws's own, and the router's).
const (
	CloseBadRequest        = 4400 // a message the protocol does not allow
	CloseUnauthorized      = 4401 // subscribe before connection_ack
	CloseForbidden         = 4403 // connection_init's credentials refused
	CloseSubprotocol       = 4406 // not graphql-transport-ws
	CloseInitTimeout       = 4408 // no connection_init in time
	CloseSubscriberExists  = 4409 // an id already subscribed
	CloseTooManyInits      = 4429 // connection_init twice
	CloseSlowConsumer      = 4410 // events came faster than the client read them (the router's)
	CloseHeartbeatTimedOut = 4411 // a ping or a write went unanswered (the router's)
)

// isWebSocket reports a WebSocket upgrade request.
func isWebSocket(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// initHeaders are the connection_init payload members taken as the
// request headers of the same names (any case): a browser cannot set
// headers on a WebSocket.
var initHeaders = []string{access.Header, "Authorization"}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsConn is one graphql-transport-ws connection.
type wsConn struct {
	rt     *Router
	conn   *websocket.Conn
	r      *http.Request // the upgrade request
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	header http.Header // the upgrade's headers with connection_init's
	acked  bool
	subs   map[string]*sub
	wg     sync.WaitGroup
	closed bool
}

func (rt *Router) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	// A connection outlives the server's read and write timeouts.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{SubprotocolGraphQLWS},
		// Credentials come in connection_init, never from cookies: a page of
		// any origin may connect, and a publishable key's origins are checked
		// against the upgrade's Origin as for SSE.
		InsecureSkipVerify: true,
	})
	if err != nil {
		return // Accept answered the refusal
	}
	if conn.Subprotocol() != SubprotocolGraphQLWS {
		conn.Close(CloseSubprotocol, "Subprotocol not acceptable: use graphql-transport-ws")
		return
	}
	conn.SetReadLimit(rt.maxBody)
	ctx, cancel := context.WithCancel(r.Context())
	c := &wsConn{rt: rt, conn: conn, r: r, ctx: ctx, cancel: cancel, subs: map[string]*sub{}, header: r.Header.Clone()}
	defer c.shutdown()
	go c.watch()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			c.close(CloseBadRequest, "messages are JSON text")
			return
		}
		if !c.handle(data) {
			return
		}
	}
}

// watch closes the connection when connection_init does not come in time,
// when the server shuts down, and when a ping goes unanswered.
func (c *wsConn) watch() {
	cfg := c.rt.live.cfg
	initTimer := time.NewTimer(cfg.InitTimeout)
	defer initTimer.Stop()
	beat := time.NewTicker(cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-initTimer.C:
			c.mu.Lock()
			acked := c.acked
			c.mu.Unlock()
			if !acked {
				c.close(CloseInitTimeout, "Connection initialisation timeout")
				return
			}
		case <-beat.C:
			pctx, cancel := context.WithTimeout(c.ctx, cfg.SendTimeout)
			err := c.conn.Ping(pctx)
			cancel()
			if err != nil && c.ctx.Err() == nil {
				telemetry.FromContext(c.ctx).SubscriptionDropped(telemetry.DropWriteFailed)
				c.close(CloseHeartbeatTimedOut, "heartbeat: the client did not answer a ping in time")
				return
			}
		case <-c.rt.live.closing:
			c.close(websocket.StatusGoingAway, "server shutting down")
			return
		}
	}
}

// close ends the connection with a code and reason (once).
func (c *wsConn) close(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	if len(reason) > 123 { // a close frame's reason fits in 123 bytes
		reason = reason[:123]
	}
	c.conn.Close(code, reason)
	c.cancel()
}

// shutdown stops every subscription of the connection once it has ended.
func (c *wsConn) shutdown() {
	c.cancel()
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]*sub{}
	c.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	c.wg.Wait()
	c.conn.CloseNow()
}

func (c *wsConn) send(m wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.rt.live.cfg.SendTimeout)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// handle acts on one client message; false ends the connection.
func (c *wsConn) handle(data []byte) bool {
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
		c.close(CloseBadRequest, "Invalid message received: a JSON object with a type")
		return false
	}
	switch m.Type {
	case "connection_init":
		return c.init(m.Payload)
	case "ping":
		return c.send(wsMessage{Type: "pong"}) == nil
	case "pong":
		return true
	case "subscribe":
		return c.subscribe(m)
	case "complete":
		c.mu.Lock()
		s := c.subs[m.ID]
		delete(c.subs, m.ID)
		c.mu.Unlock()
		if s != nil {
			s.stop()
		}
		return true
	default:
		c.close(CloseBadRequest, "Invalid message received: unknown type "+fmt.Sprintf("%.40q", m.Type))
		return false
	}
}

// init authenticates connection_init's credentials as a request's headers
// are, and acknowledges them.
func (c *wsConn) init(payload json.RawMessage) bool {
	c.mu.Lock()
	if c.acked {
		c.mu.Unlock()
		c.close(CloseTooManyInits, "Too many initialisation requests")
		return false
	}
	c.mu.Unlock()
	var params map[string]any
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &params); err != nil {
			c.close(CloseBadRequest, "Invalid message received: connection_init's payload must be an object")
			return false
		}
	}
	header := c.r.Header.Clone()
	for k, v := range params {
		s, ok := v.(string)
		if !ok {
			continue
		}
		for _, name := range initHeaders {
			if strings.EqualFold(k, name) {
				header.Set(name, s)
			}
		}
	}
	// The same check as a request's: a refusal closes with its message.
	rec := newRecorder()
	if _, _, ok := c.rt.caller(responder{w: rec, media: MediaJSON}, c.request(header, nil), true); !ok {
		code := websocket.StatusCode(CloseForbidden)
		if rec.status == http.StatusTooManyRequests {
			code = CloseTooManyInits
		}
		c.close(code, "Forbidden: "+rec.message())
		return false
	}
	c.mu.Lock()
	c.header, c.acked = header, true
	c.mu.Unlock()
	return c.send(wsMessage{Type: "connection_ack"}) == nil
}

// request is the HTTP request a message stands for: the upgrade's, with
// the connection's headers and body as its JSON body.
func (c *wsConn) request(header http.Header, body []byte) *http.Request {
	r := c.r.Clone(c.ctx)
	r.Method = http.MethodPost
	r.Header = header.Clone()
	r.Header.Set("Content-Type", MediaJSON)
	r.Body = nopCloser{bytes.NewReader(body)}
	r.ContentLength = int64(len(body))
	return r
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// subscribe admits and starts one operation; its refusal is an error
// message, and the connection stays.
func (c *wsConn) subscribe(m wsMessage) bool {
	c.mu.Lock()
	acked, header := c.acked, c.header
	_, exists := c.subs[m.ID]
	n := len(c.subs)
	c.mu.Unlock()
	switch {
	case !acked:
		c.close(CloseUnauthorized, "Unauthorized")
		return false
	case m.ID == "":
		c.close(CloseBadRequest, "Invalid message received: subscribe needs an id")
		return false
	case exists:
		c.close(CloseSubscriberExists, "Subscriber for "+fmt.Sprintf("%.64s", m.ID)+" already exists")
		return false
	case n >= c.rt.live.cfg.PerConnection:
		e := gqlErr(CodeTooManySubscriptions, fmt.Sprintf("this connection already holds %d subscriptions, the maximum: complete one first", c.rt.live.cfg.PerConnection))
		e.Extensions["limit"], e.Extensions["maximum"] = "subscriptions per connection", c.rt.live.cfg.PerConnection
		return c.refuse(m.ID, []*gqlerror.Error{e})
	}
	rec := newRecorder()
	a, buf, ok := c.rt.admit(responder{w: rec, media: MediaJSON}, c.request(header, m.Payload), true)
	if !ok {
		return c.refuse(m.ID, rec.errors())
	}
	a.req.Variables = bytes.Clone(a.req.Variables) // beyond the pooled body
	putBuf(buf)
	s, errs := c.rt.start(c.ctx, a, "ws")
	if errs != nil {
		return c.refuse(m.ID, errs)
	}
	c.mu.Lock()
	c.subs[m.ID] = s
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run(m.ID, s)
	}()
	return true
}

// run sends one subscription's events until it ends.
func (c *wsConn) run(id string, s *sub) {
	defer s.stop()
	next := func(payload []byte) error {
		return c.send(wsMessage{ID: id, Type: "next", Payload: payload})
	}
	e, dropped := c.rt.deliver(c.ctx, s, "ws", next, nil) // the connection pings
	c.mu.Lock()
	mine := c.subs[id] == s
	if mine {
		delete(c.subs, id)
	}
	c.mu.Unlock()
	switch dropped {
	case "":
		if !mine {
			return // the client completed it
		}
		if e.kind == endError && next(e.payload) != nil {
			return
		}
		c.send(wsMessage{ID: id, Type: "complete"})
	case telemetry.DropSlowConsumer:
		c.close(CloseSlowConsumer, slowMessage(c.rt.live.cfg.SendBuffer))
	case telemetry.DropWriteFailed:
		c.close(CloseHeartbeatTimedOut, "a write to the client timed out")
	}
}

// refuse answers a subscribe with an error message.
func (c *wsConn) refuse(id string, errs []*gqlerror.Error) bool {
	b, _ := json.Marshal(errs)
	return c.send(wsMessage{ID: id, Type: "error", Payload: b}) == nil
}

// recorder keeps a refusal the request checks answered, to send it over
// the WebSocket instead.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// errors are the GraphQL errors recorded.
func (r *recorder) errors() []*gqlerror.Error {
	var out struct {
		Errors []*gqlerror.Error `json:"errors"`
	}
	if json.Unmarshal(r.body.Bytes(), &out) != nil || len(out.Errors) == 0 {
		return []*gqlerror.Error{gqlErr(CodeInternal, "the operation was refused")}
	}
	return out.Errors
}

// message is the first recorded error's message.
func (r *recorder) message() string {
	return r.errors()[0].Message
}
