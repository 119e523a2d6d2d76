package router_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/inproc"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

// The subscription composition (testdata/federation/subscription): the
// sessions subgraph streams Session events over GraphQL-over-SSE (POST), each
// naming a Cigar that the catalog subgraph resolves per event.

// liveSubgraph serves a fakeSubgraph's queries, and its subscriptions as
// GraphQL over SSE: each published event is rendered through the
// subscription's selection set and sent to the streams whose venue argument
// matches it.
type liveSubgraph struct {
	*fakeSubgraph
	mu      sync.Mutex
	streams map[*liveStream]bool
	changed chan struct{} // a stream opened or closed
}

type liveStream struct {
	venue  string
	events chan map[string]any
	done   chan struct{}
}

func newLiveSubgraph() *liveSubgraph {
	return &liveSubgraph{fakeSubgraph: &fakeSubgraph{}, streams: map[*liveStream]bool{}, changed: make(chan struct{}, 100)}
}

func (s *liveSubgraph) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.fakeSubgraph.ServeHTTP(w, r)
		return
	}
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: req.Query})
	if err != nil || len(doc.Operations) != 1 || doc.Operations[0].Operation != ast.Subscription {
		http.Error(w, "one subscription please", http.StatusBadRequest)
		return
	}
	op := doc.Operations[0]
	field := op.SelectionSet[0].(*ast.Field)
	st := &liveStream{events: make(chan map[string]any, 1000), done: make(chan struct{})}
	if arg := field.Arguments.ForName("venue"); arg != nil {
		v, _ := arg.Value.Value(req.Variables)
		st.venue, _ = v.(string)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	s.mu.Lock()
	s.streams[st] = true
	s.mu.Unlock()
	s.changed <- struct{}{}
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		s.mu.Unlock()
		s.changed <- struct{}{}
	}()
	for {
		select {
		case ev := <-st.events:
			e := &fakeExec{s: s.fakeSubgraph, doc: doc, vars: req.Variables}
			var out bytes.Buffer
			out.WriteString(`{"data":`)
			e.object(&out, map[string]any{"__typename": "Subscription", field.Name: ev}, op.SelectionSet, nil)
			out.WriteString("}")
			fmt.Fprintf(w, "event: next\ndata: %s\n\n", out.Bytes())
			w.(http.Flusher).Flush()
		case <-st.done:
			io.WriteString(w, "event: complete\ndata: \n\n")
			w.(http.Flusher).Flush()
			return
		case <-r.Context().Done():
			return
		}
	}
}

// waitStreams waits until n streams are open.
func (s *liveSubgraph) waitStreams(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.streams)
		s.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-s.changed:
		case <-deadline:
			tb.Fatalf("%d subscriptions open at the subgraph, want %d", got, n)
		}
	}
}

// publish sends an event to every stream of its venue (or of no venue).
func (s *liveSubgraph) publish(ev map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		if st.venue == "" || st.venue == ev["venue"] {
			st.events <- ev
		}
	}
}

// queued is the most events waiting in a stream of the subgraph.
func (s *liveSubgraph) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for st := range s.streams {
		n = max(n, len(st.events))
	}
	return n
}

// completeAll ends every stream as a source does.
func (s *liveSubgraph) completeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.streams {
		close(st.done)
	}
}

func session(id, venue, cigar string) map[string]any {
	return map[string]any{"__typename": "Session", "id": id, "venue": venue, "cigar": map[string]any{"__typename": "Cigar", "id": cigar}}
}

// testKeys: a secret key, another one, and a publishable key for one origin.
type testKeys struct{}

const (
	secretKey      = "test-key"
	otherKey       = "other-key"
	publishableKey = "pub-key"
	allowedOrigin  = "https://venue.example"
)

func (testKeys) Authenticate(_ context.Context, plain string) (access.Key, error) {
	switch plain {
	case secretKey:
		return access.Key{ID: "key_test", Name: "test"}, nil
	case otherKey:
		return access.Key{ID: "key_other", Name: "other"}, nil
	case publishableKey:
		return access.Key{ID: "key_pub", Name: "pub", Publishable: true, Origins: []string{allowedOrigin}}, nil
	}
	return access.Key{}, access.ErrNoKey
}

// OriginRegistered: the publishable key's origin only.
func (testKeys) OriginRegistered(_ context.Context, origin string) (bool, error) {
	return origin == allowedOrigin, nil
}

type liveEnv struct {
	rt       *router.Router
	srv      *httptest.Server
	sessions *liveSubgraph
	tel      *telemetry.Telemetry
}

// newLiveEnv serves the real router over the subscription composition on a
// loopback listener, with metrics, under the platform's server timeouts
// made short: streams must outlive them.
func newLiveEnv(t *testing.T, subs router.SubscriptionSettings, lim limits.Config) *liveEnv {
	t.Helper()
	composed, err := router.LoadComposed(compositionConfig(t, "subscription"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sessions := newLiveSubgraph()
	sessions.sdl = compositionSDL(t, "subscription", "sessions")
	catalog := &fakeSubgraph{sdl: compositionSDL(t, "subscription", "catalog"), entities: map[string]func(map[string]any) (map[string]any, error){
		"Cigar": func(rep map[string]any) (map[string]any, error) {
			return map[string]any{"id": rep["id"], "name": "Cigar " + rep["id"].(string)}, nil
		},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := &http.Client{Transport: &inproc.Transport{Handlers: map[string]http.Handler{"sessions.test": sessions, "catalog.test": catalog}}}
	if subs.PublicFields == nil {
		subs.PublicFields = []string{"sessionStarted"}
	}
	rt, err := router.New(ctx, router.Config{Composed: composed, Client: client, Keys: testKeys{}, Limits: lim, Tuning: testTuning, Logger: zerolog.Nop(), Subscriptions: subs, Origins: testKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(ctx, telemetry.Options{Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", rt)
	srv := httptest.NewUnstartedServer(tel.Handler("router", mux))
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	return &liveEnv{rt: rt, srv: srv, sessions: sessions, tel: tel}
}

const sessionsByVenue = `subscription Live($venue: ID) { sessionStarted(venue: $venue) { id venue cigar { id name } } }`

// sseStream is a GraphQL-over-SSE client's stream.
type sseStream struct {
	resp *http.Response
	rd   *bufio.Reader
}

// sse opens a GraphQL-over-SSE stream (POST); a refusal comes back as the
// response with a nil stream.
func (e *liveEnv) sse(t *testing.T, key, origin string, body map[string]any) (*http.Response, *sseStream) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set(access.Header, key)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Cleanup(func() { resp.Body.Close() })
		return resp, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, &sseStream{resp: resp, rd: bufio.NewReader(resp.Body)}
}

// sseEvent is one server-sent event, or a comment.
type sseEvent struct {
	event, data, comment string
}

// next reads the next event (comments included); io.EOF at the end.
func (s *sseStream) next(t *testing.T) (sseEvent, error) {
	t.Helper()
	var ev sseEvent
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(strings.TrimPrefix(line, ":"))
			if ev.comment != "" {
				return ev, nil // a comment with a text stands alone
			}
		case strings.HasPrefix(line, "event:"):
			ev.event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			ev.data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
}

// nextEvent skips heartbeats (empty comments) to the next event or comment.
func (s *sseStream) nextEvent(t *testing.T) sseEvent {
	t.Helper()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.resp.Body.Close()
		}
	}()
	ev, err := s.next(t)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return ev
}

func TestSubscriptionOverSSE(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{Heartbeat: 50 * time.Millisecond}, limits.Defaults())
	_, st := e.sse(t, secretKey, "", map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": "v1"}})
	if st == nil {
		t.Fatal("refused")
	}
	e.sessions.waitStreams(t, 1)
	e.sessions.publish(session("s1", "v1", "c1"))
	e.sessions.publish(session("s2", "v2", "c2")) // another venue's
	e.sessions.publish(session("s3", "v1", "c3"))
	var got []string
	for len(got) < 2 {
		ev := st.nextEvent(t)
		if ev.event == "" {
			continue
		}
		if ev.event != "next" {
			t.Fatalf("event %q (%s), want next", ev.event, ev.data)
		}
		got = append(got, ev.data)
	}
	// Past the server's 500 ms read and write timeouts, the stream lives on.
	time.Sleep(700 * time.Millisecond)
	e.sessions.publish(session("s4", "v1", "c4"))
	for ev := st.nextEvent(t); ; ev = st.nextEvent(t) {
		if ev.event == "next" {
			got = append(got, ev.data)
			break
		}
	}
	want := []string{
		`{"data":{"sessionStarted":{"id":"s1","venue":"v1","cigar":{"id":"c1","name":"Cigar c1"}}}}`,
		`{"data":{"sessionStarted":{"id":"s3","venue":"v1","cigar":{"id":"c3","name":"Cigar c3"}}}}`,
		`{"data":{"sessionStarted":{"id":"s4","venue":"v1","cigar":{"id":"c4","name":"Cigar c4"}}}}`,
	}
	for i := range want {
		sameJSON(t, got[i], want[i])
	}
	// The source completes: so does the stream.
	e.sessions.completeAll()
	for ev := st.nextEvent(t); ; ev = st.nextEvent(t) {
		if ev.event == "complete" {
			break
		}
		if ev.event != "" {
			t.Fatalf("event %q (%s), want complete", ev.event, ev.data)
		}
	}
	if _, err := st.next(t); err != io.EOF {
		t.Fatalf("after complete: %v, want the end of the stream", err)
	}
	e.metric(t, `vitola_graphql_subscription_events_total{protocol="sse"} 3`)
	e.waitMetric(t, `vitola_graphql_subscriptions_active{protocol="sse"} 0`)
}

// metric fails unless /metrics shows line.
func (e *liveEnv) metric(t *testing.T, line string) {
	t.Helper()
	if !e.hasMetric(line) {
		t.Fatalf("metrics lack %q", line)
	}
}

func (e *liveEnv) hasMetric(line string) bool {
	w := httptest.NewRecorder()
	e.tel.Metrics.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return strings.Contains(w.Body.String(), line+"\n")
}

// waitMetric waits for /metrics to show line (what ends a stream runs after
// the client has seen its end).
func (e *liveEnv) waitMetric(t *testing.T, line string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if e.hasMetric(line) {
			return
		}
	}
	e.metric(t, line)
}

// wsClient is a graphql-transport-ws client.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func (e *liveEnv) ws(t *testing.T, header http.Header) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{router.SubprotocolGraphQLWS}, HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Sec-WebSocket-Protocol") != router.SubprotocolGraphQLWS {
		t.Fatalf("subprotocol %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	conn.SetReadLimit(-1)
	t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(m map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

type wsMsg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// read reads the next message, or the close's error.
func (c *wsClient) read() (wsMsg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		return wsMsg{}, err
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("message is not JSON: %s", b)
	}
	return m, nil
}

func (c *wsClient) expect(typ string) wsMsg {
	c.t.Helper()
	m, err := c.read()
	if err != nil {
		c.t.Fatalf("want %s: %v", typ, err)
	}
	if m.Type != typ {
		c.t.Fatalf("got %s %s, want %s", m.Type, m.Payload, typ)
	}
	return m
}

// expectClose reads until the connection closes, and checks its code and
// that its reason says want.
func (c *wsClient) expectClose(code websocket.StatusCode, want string) {
	c.t.Helper()
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			c.t.Fatalf("want close %d: %v", code, err)
		}
		if ce.Code != code || !strings.Contains(ce.Reason, want) {
			c.t.Fatalf("closed %d %q, want %d %q", ce.Code, ce.Reason, code, want)
		}
		return
	}
}

func (c *wsClient) init(payload map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "connection_init", "payload": payload})
	c.expect("connection_ack")
}

func TestSubscriptionOverWebSocket(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	c := e.ws(t, nil)
	c.init(map[string]any{"X-Service-Key": secretKey}) // any case, as headers
	c.send(map[string]any{"type": "ping"})
	c.expect("pong")
	c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": "v1"}}})
	e.sessions.waitStreams(t, 1)
	e.sessions.publish(session("s1", "v1", "c1"))
	m := c.expect("next")
	if m.ID != "1" {
		t.Fatalf("id %q", m.ID)
	}
	sameJSON(t, string(m.Payload), `{"data":{"sessionStarted":{"id":"s1","venue":"v1","cigar":{"id":"c1","name":"Cigar c1"}}}}`)
	// A query runs over the same connection: one next, then complete.
	c.send(map[string]any{"type": "subscribe", "id": "q", "payload": map[string]any{"query": `{ cigar(id: "c9") { id } }`}})
	m = c.expect("next")
	if m.ID != "q" {
		t.Fatalf("id %q", m.ID)
	}
	if m = c.expect("complete"); m.ID != "q" {
		t.Fatalf("id %q", m.ID)
	}
	// The client completes its subscription: the source ends too.
	c.send(map[string]any{"type": "complete", "id": "1"})
	e.sessions.waitStreams(t, 0)
	e.waitMetric(t, `vitola_graphql_subscriptions_active{protocol="ws"} 0`)
	e.metric(t, `vitola_graphql_subscription_events_total{protocol="ws"} 2`)
	// A source that completes completes the client's subscription.
	c.send(map[string]any{"type": "subscribe", "id": "2", "payload": map[string]any{"query": sessionsByVenue}})
	e.sessions.waitStreams(t, 1)
	e.sessions.completeAll()
	if m = c.expect("complete"); m.ID != "2" {
		t.Fatalf("id %q", m.ID)
	}
}

// TestSubscriptionProtocolErrors: the graphql-transport-ws close codes.
func TestSubscriptionProtocolErrors(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	sub := map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": sessionsByVenue}}
	t.Run("no key", func(t *testing.T) {
		c := e.ws(t, nil)
		c.send(map[string]any{"type": "connection_init"})
		c.expectClose(router.CloseForbidden, "Forbidden")
	})
	t.Run("wrong key", func(t *testing.T) {
		c := e.ws(t, nil)
		c.send(map[string]any{"type": "connection_init", "payload": map[string]any{"x-service-key": "nope"}})
		c.expectClose(router.CloseForbidden, "Forbidden")
	})
	t.Run("key in the upgrade's headers", func(t *testing.T) {
		c := e.ws(t, http.Header{access.Header: {secretKey}})
		c.init(nil)
	})
	t.Run("subscribe before init", func(t *testing.T) {
		c := e.ws(t, nil)
		c.send(sub)
		c.expectClose(router.CloseUnauthorized, "Unauthorized")
	})
	t.Run("init timeout", func(t *testing.T) {
		c := newLiveEnv(t, router.SubscriptionSettings{InitTimeout: 100 * time.Millisecond}, limits.Defaults()).ws(t, nil)
		c.expectClose(router.CloseInitTimeout, "timeout")
	})
	t.Run("init twice", func(t *testing.T) {
		c := e.ws(t, nil)
		c.init(map[string]any{"x-service-key": secretKey})
		c.send(map[string]any{"type": "connection_init", "payload": map[string]any{"x-service-key": secretKey}})
		c.expectClose(router.CloseTooManyInits, "Too many initialisation requests")
	})
	t.Run("same id twice", func(t *testing.T) {
		c := e.ws(t, nil)
		c.init(map[string]any{"x-service-key": secretKey})
		c.send(sub)
		c.send(sub)
		c.expectClose(router.CloseSubscriberExists, "Subscriber for 1 already exists")
	})
	t.Run("not JSON", func(t *testing.T) {
		c := e.ws(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.conn.Write(ctx, websocket.MessageText, []byte("hello"))
		c.expectClose(router.CloseBadRequest, "Invalid message")
	})
	e.sessions.waitStreams(t, 0)
}

// TestSubscriptionChecks: a subscription passes the checks a query passes
// before anything subscribes, over both protocols.
func TestSubscriptionChecks(t *testing.T) {
	lim := limits.Defaults()
	lim.MaxDepth = 2
	e := newLiveEnv(t, router.SubscriptionSettings{}, lim)
	tests := []struct {
		name, key, origin, query string
		status                   int
		code                     string
	}{
		{"no key", "", "", sessionsByVenue, http.StatusUnauthorized, router.CodeUnauthenticated},
		{"too deep", secretKey, "", `subscription { sessionStarted { cigar { id name } } }`, http.StatusBadRequest, limits.CodeDepth},
		{"invalid", secretKey, "", `subscription { sessionStarted { nope } }`, http.StatusBadRequest, limits.CodeValidationFailed},
		{"publishable key without origin", publishableKey, "", `subscription { sessionStarted { id } }`, http.StatusForbidden, router.CodeForbidden},
		{"publishable key from another origin", publishableKey, "https://evil.example", `subscription { sessionStarted { id } }`, http.StatusForbidden, router.CodeForbidden},
		{"publishable key, a private subscription", publishableKey, allowedOrigin, `subscription { mySessionStarted { id } }`, http.StatusForbidden, router.CodeForbidden},
		{"publishable key, a query", publishableKey, allowedOrigin, `{ cigar(id: "c1") { id } }`, http.StatusForbidden, router.CodeForbidden},
	}
	for _, tc := range tests {
		t.Run("sse/"+tc.name, func(t *testing.T) {
			resp, st := e.sse(t, tc.key, tc.origin, map[string]any{"query": tc.query})
			if st != nil {
				t.Fatal("subscribed")
			}
			r := decodeBody(t, resp)
			if resp.StatusCode != tc.status || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != tc.code {
				t.Fatalf("%d %+v, want %d %s", resp.StatusCode, r.Errors, tc.status, tc.code)
			}
		})
		if tc.key == "" || tc.key == publishableKey && tc.origin != allowedOrigin {
			continue // refused at connection_init (TestSubscriptionProtocolErrors)
		}
		t.Run("ws/"+tc.name, func(t *testing.T) {
			c := e.ws(t, http.Header{"Origin": {tc.origin}})
			c.init(map[string]any{"x-service-key": tc.key})
			c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": tc.query}})
			m := c.expect("error")
			var errs []struct {
				Extensions map[string]any `json:"extensions"`
			}
			json.Unmarshal(m.Payload, &errs)
			if m.ID != "1" || len(errs) == 0 || errs[0].Extensions["code"] != tc.code {
				t.Fatalf("error %s %s, want %s", m.ID, m.Payload, tc.code)
			}
		})
	}
	t.Run("publishable key from its origin", func(t *testing.T) {
		resp, st := e.sse(t, publishableKey, allowedOrigin, map[string]any{"query": `subscription { sessionStarted(venue: "v7") { id } }`})
		if st == nil {
			t.Fatal("refused")
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != allowedOrigin {
			t.Fatalf("Access-Control-Allow-Origin %q", got)
		}
		e.sessions.waitStreams(t, 1)
		e.sessions.publish(session("s1", "v7", "c1"))
		for ev := st.nextEvent(t); ; ev = st.nextEvent(t) {
			if ev.event == "next" {
				sameJSON(t, ev.data, `{"data":{"sessionStarted":{"id":"s1"}}}`)
				break
			}
		}
		st.resp.Body.Close()
		e.sessions.waitStreams(t, 0)
	})
	t.Run("plain JSON", func(t *testing.T) {
		tr := &testRouter{rt: e.rt, key: secretKey}
		w := tr.serve(queryBody(`subscription { sessionStarted { id } }`, nil))
		r := decodeReply(t, w)
		if w.Code != http.StatusNotAcceptable || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != router.CodeNotAcceptable || !strings.Contains(r.Errors[0].Message, "text/event-stream") {
			t.Fatalf("%d %s", w.Code, w.Body.Bytes())
		}
	})
}

func decodeBody(t *testing.T, resp *http.Response) gqlReply {
	t.Helper()
	var r gqlReply
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%d: not JSON: %s", resp.StatusCode, b)
	}
	return r
}

// TestSubscriptionCaps: per key across connections and protocols, and per
// connection.
func TestSubscriptionCaps(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{PerKey: 2, PerConnection: 1}, limits.Defaults())
	// Each on a venue of its own: identical subscriptions of one key would
	// share one source subscription.
	sub := func(id string) map[string]any {
		return map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": id}}}
	}
	venue := func(v string) map[string]any {
		return map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": v}}
	}
	c1 := e.ws(t, nil)
	c1.init(map[string]any{"x-service-key": secretKey})
	c1.send(sub("a"))
	e.sessions.waitStreams(t, 1)
	c1.send(sub("b")) // over the connection's cap
	m := c1.expect("error")
	if m.ID != "b" || !strings.Contains(string(m.Payload), "subscriptions per connection") {
		t.Fatalf("%s %s", m.ID, m.Payload)
	}
	_, st := e.sse(t, secretKey, "", venue("x"))
	if st == nil {
		t.Fatal("refused below the key's cap")
	}
	e.sessions.waitStreams(t, 2)
	resp, st := e.sse(t, secretKey, "", venue("y"))
	if st != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%d over the key's cap", resp.StatusCode)
	}
	if r := decodeBody(t, resp); r.Errors[0].Extensions["code"] != router.CodeTooManySubscriptions {
		t.Fatalf("%+v", r.Errors)
	}
	// Another key has its own count.
	if _, st := e.sse(t, otherKey, "", venue("z")); st == nil {
		t.Fatal("another key refused")
	}
	e.sessions.waitStreams(t, 3)
	// Completing one frees its place.
	c1.send(map[string]any{"type": "complete", "id": "a"})
	e.sessions.waitStreams(t, 2)
	c1.send(sub("c"))
	e.sessions.waitStreams(t, 3)

	// A publishable key's allowance is each client address's: a website's
	// visitors do not share it.
	public := func(venue string) map[string]any {
		return map[string]any{"query": `subscription($v: ID) { sessionStarted(venue: $v) { id } }`, "variables": map[string]any{"v": venue}}
	}
	for _, tc := range []struct {
		from, venue string
		status      int
	}{{"127.0.0.1", "p1", 200}, {"127.0.0.1", "p2", 200}, {"127.0.0.1", "p3", http.StatusTooManyRequests}, {"127.0.0.2", "p4", 200}} {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}
		client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
		t.Cleanup(client.CloseIdleConnections)
		raw, _ := json.Marshal(public(tc.venue))
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(access.Header, publishableKey)
		req.Header.Set("Origin", allowedOrigin)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != tc.status {
			t.Fatalf("publishable key from %s (venue %s): %d, want %d", tc.from, tc.venue, resp.StatusCode, tc.status)
		}
	}
}

// TestSubscriptionSlowConsumer: a client that does not read is dropped with
// a reason once its queue is full; nothing buffers without bound.
func TestSubscriptionSlowConsumer(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{SendBuffer: 4, SendTimeout: time.Minute}, limits.Defaults())
	big := strings.Repeat("x", 16<<10) // the engine reads a source's events up to 64 KiB
	// Publish until the router gives up on the client; socket buffers take
	// a few megabytes first.
	drops := 0
	flood := func(t *testing.T) {
		drops++
		for i, deadline := 0, time.Now().Add(30*time.Second); time.Now().Before(deadline); i++ {
			if e.hasMetric(fmt.Sprintf(`vitola_graphql_subscription_drops_total{reason="slow_consumer"} %d`, drops)) {
				return
			}
			if e.sessions.queued() < 8 { // the source keeps up: the router's queue is what fills
				e.sessions.publish(session(fmt.Sprintf("%s-%d", big, i), "v1", "c1"))
			}
			time.Sleep(time.Millisecond)
		}
		w := httptest.NewRecorder()
		e.tel.Metrics.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, l := range strings.Split(w.Body.String(), "\n") {
			if strings.Contains(l, "subscription") {
				t.Log(l)
			}
		}
		t.Fatal("never dropped", e.sessions.queued())
	}
	t.Run("ws", func(t *testing.T) {
		c := e.ws(t, nil)
		c.init(map[string]any{"x-service-key": secretKey})
		c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": `subscription { sessionStarted { id } }`}})
		e.sessions.waitStreams(t, 1)
		flood(t)
		c.expectClose(router.CloseSlowConsumer, "slow consumer")
		e.sessions.waitStreams(t, 0)
	})
	t.Run("sse", func(t *testing.T) {
		_, st := e.sse(t, secretKey, "", map[string]any{"query": `subscription { sessionStarted { id } }`})
		e.sessions.waitStreams(t, 1)
		flood(t)
		var last sseEvent
		saidWhy := false
		for {
			ev, err := st.next(t)
			if err != nil {
				break
			}
			if ev.event != "" {
				last = ev
			}
			saidWhy = saidWhy || strings.HasPrefix(ev.comment, "dropped: slow consumer")
		}
		if !saidWhy || last.event != "next" || !strings.Contains(last.data, router.CodeSlowConsumer) {
			t.Fatalf("comment said why: %v; last event %+v, want next with %s", saidWhy, last, router.CodeSlowConsumer)
		}
		e.sessions.waitStreams(t, 0)
	})
	e.waitMetric(t, `vitola_graphql_subscription_drops_total{reason="slow_consumer"} 2`)
}

// TestSubscriptionShutdown: the router's Shutdown (which the server's
// shutdown calls) closes every stream with a reason and refuses new ones.
func TestSubscriptionShutdown(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	c := e.ws(t, nil)
	c.init(map[string]any{"x-service-key": secretKey})
	c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{"query": sessionsByVenue}})
	_, st := e.sse(t, secretKey, "", map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": "v2"}})
	e.sessions.waitStreams(t, 2)
	e.rt.Shutdown()
	c.expectClose(websocket.StatusGoingAway, "server shutting down")
	var comment string
	for {
		ev, err := st.next(t)
		if err != nil {
			break
		}
		if ev.comment != "" {
			comment = ev.comment
		}
	}
	if comment != "server shutting down" {
		t.Fatalf("last comment %q", comment)
	}
	e.sessions.waitStreams(t, 0)
	resp, st := e.sse(t, secretKey, "", map[string]any{"query": sessionsByVenue})
	if st != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%d after shutdown", resp.StatusCode)
	}
	e.waitMetric(t, `vitola_graphql_subscription_drops_total{reason="shutdown"} 2`)
	e.metric(t, `vitola_graphql_subscriptions_active{protocol="ws"} 0`)
}

// TestSubscriptionPreflight: a page on a publishable key's origin may send
// x-service-key cross-origin; other origins get no CORS headers.
func TestSubscriptionPreflight(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	for _, tc := range []struct {
		origin string
		status int
	}{{allowedOrigin, http.StatusNoContent}, {"https://evil.example", http.StatusForbidden}} {
		req, _ := http.NewRequest(http.MethodOptions, e.srv.URL+"/graphql", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, x-service-key")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		allow := resp.Header.Get("Access-Control-Allow-Origin")
		if resp.StatusCode != tc.status || (tc.status == http.StatusNoContent) != (allow == tc.origin) {
			t.Fatalf("%s: %d, Access-Control-Allow-Origin %q", tc.origin, resp.StatusCode, allow)
		}
		if tc.status == http.StatusNoContent && !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), access.Header) {
			t.Fatalf("Access-Control-Allow-Headers %q", resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
}

// TestSubscriptionOverMultipart: Apollo Client's multipart HTTP
// subscriptions, read with a standard multipart reader: a heartbeat part {},
// then {"payload": RESPONSE} per event, then the closing boundary.
func TestSubscriptionOverMultipart(t *testing.T) {
	// A part is complete once the next boundary has come; Go's reader also
	// wants the line after that boundary, which the next heartbeat brings.
	e := newLiveEnv(t, router.SubscriptionSettings{Heartbeat: 50 * time.Millisecond}, limits.Defaults())
	raw, _ := json.Marshal(map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": "v1"}})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", `multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json`)
	req.Header.Set(access.Header, secretKey)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	media, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || err != nil || media != "multipart/mixed" || params["boundary"] != "graphql" || params["subscriptionspec"] != "1.0" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	part := func() string {
		t.Helper()
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		if ct := p.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("part Content-Type %q", ct)
		}
		b, _ := io.ReadAll(p)
		return string(b)
	}
	if got := part(); got != "{}" {
		t.Fatalf("first part %q, want the heartbeat {}", got)
	}
	e.sessions.waitStreams(t, 1)
	e.sessions.publish(session("s1", "v1", "c1"))
	got := part()
	for got == "{}" { // heartbeats
		got = part()
	}
	sameJSON(t, got, `{"payload":{"data":{"sessionStarted":{"id":"s1","venue":"v1","cigar":{"id":"c1","name":"Cigar c1"}}}}}`)
	e.sessions.completeAll()
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after complete: %v, want the closing boundary", err)
		}
		if b, _ := io.ReadAll(p); string(b) != "{}" {
			t.Fatalf("after complete: part %q, want the closing boundary", b)
		}
	}
	e.waitMetric(t, `vitola_graphql_subscription_events_total{protocol="multipart"} 1`)
}

// TestSubscriptionOverSSEWithGET: graphql-sse's GET form (URL parameters)
// streams too; a plain GET of a subscription stays a 405.
func TestSubscriptionOverSSEWithGET(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	q := url.Values{"query": {sessionsByVenue}, "variables": {`{"venue":"v1"}`}}
	for _, tc := range []struct {
		accept string
		status int
	}{{"text/event-stream", http.StatusOK}, {router.MediaGraphQLResponse, http.StatusMethodNotAllowed}} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/graphql?"+q.Encode(), nil)
		req.Header.Set("Accept", tc.accept)
		req.Header.Set(access.Header, secretKey)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != tc.status {
			t.Fatalf("GET with Accept %s: %d, want %d", tc.accept, resp.StatusCode, tc.status)
		}
		if tc.status != http.StatusOK {
			continue
		}
		st := &sseStream{resp: resp, rd: bufio.NewReader(resp.Body)}
		e.sessions.waitStreams(t, 1)
		e.sessions.publish(session("s1", "v1", "c1"))
		for ev := st.nextEvent(t); ; ev = st.nextEvent(t) {
			if ev.event == "next" {
				sameJSON(t, ev.data, `{"data":{"sessionStarted":{"id":"s1","venue":"v1","cigar":{"id":"c1","name":"Cigar c1"}}}}`)
				break
			}
		}
	}
}
