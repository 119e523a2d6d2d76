package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
	usersgraph "github.com/vitolahq/vitola/subgraphs/users/graph"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

var internalKey = []byte("0123456789abcdef0123456789abcdef")

// replica is one users-subgraph server over HTTP, behind the internal-token
// check, on a store and a bus.
type replica struct {
	t   testing.TB
	url string
	st  *sqlstore.Store
	bus bus.Bus
}

// waitSubscribed waits until exactly n bus subscriptions are open on the
// replica (a stream whose client left closes its subscriptions a moment
// later; one answered has subscribed: TestAnsweredMeansSubscribed).
func (r *replica) waitSubscribed(n int64) {
	r.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); r.bus.Stats().Subscribers != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d bus subscriptions after 5 s, want %d", r.bus.Stats().Subscribers, n)
		}
	}
}

func newReplica(t testing.TB, st *sqlstore.Store, b bus.Bus) *replica {
	return newReplicaOn(t, st, b, nil)
}

// newReplicaOn is newReplica with the server's connections set up by
// accepted (nil: as they come).
func newReplicaOn(t testing.TB, st *sqlstore.Store, b bus.Bus, accepted func(net.Conn)) *replica {
	t.Helper()
	v, err := trust.NewVerifier(internalKey)
	if err != nil {
		t.Fatal(err)
	}
	gql := usersgraph.NewHandler(st, "http://vitola.test", usersgraph.Options{Bus: b})
	srv := httptest.NewUnstartedServer(subgraph.Handler("users", gql, v, st))
	if accepted != nil {
		srv.Listener = acceptHook{srv.Listener, accepted}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &replica{t: t, url: srv.URL + "/graphql", st: st, bus: b}
}

// acceptHook calls f on every connection it accepts.
type acceptHook struct {
	net.Listener
	f func(net.Conn)
}

func (a acceptHook) Accept() (net.Conn, error) {
	c, err := a.Listener.Accept()
	if err == nil {
		a.f(c)
	}
	return c, err
}

// smallBuffer gives a socket 4 KB buffers: a peer that stops reading blocks
// its writer after a few kilobytes, whatever the kernel's autotuning.
func smallBuffer(opt int) func(fd uintptr) {
	return func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, 4096) }
}

func token(t testing.TB, caller string, id trust.Identity) string {
	t.Helper()
	iss, err := trust.NewIssuer(internalKey, caller)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Token(id)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type gqlResponse struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (g gqlResponse) code() string {
	if len(g.Errors) == 0 {
		return ""
	}
	c, _ := g.Errors[0].Extensions["code"].(string)
	return c
}

// query runs one operation as caller ("shim" or "router") for id.
func (r *replica) query(caller string, id trust.Identity, q string, vars map[string]any) gqlResponse {
	r.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(trust.Header, token(r.t, caller, id))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		r.t.Fatalf("query answer: %v", err)
	}
	return out
}

// sseStream is a subscription opened as the router opens it: GraphQL over
// SSE, a POST with Accept: text/event-stream.
type sseStream struct {
	events   chan gqlResponse // each `event: next`; closed at the end
	complete chan struct{}    // closed on `event: complete` or EOF
	cancel   context.CancelFunc
	status   int
}

func (r *replica) subscribe(id trust.Identity, q string, vars map[string]any) *sseStream {
	return r.subscribeWith(token(r.t, "router", id), q, vars)
}

func (r *replica) subscribeWith(internalToken, q string, vars map[string]any) *sseStream {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if internalToken != "" {
		req.Header.Set(trust.Header, internalToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	s := &sseStream{events: make(chan gqlResponse, 16), complete: make(chan struct{}), cancel: cancel, status: resp.StatusCode}
	go func() {
		defer resp.Body.Close()
		defer close(s.complete)
		defer close(s.events) // after every event is read: next sees them first
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
				if event == "complete" {
					return
				}
			case strings.HasPrefix(line, "data: ") && event == "next":
				var g gqlResponse
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &g); err != nil {
					r.t.Errorf("event data %q: %v", line, err)
					return
				}
				s.events <- g
			}
		}
	}()
	return s
}

// next waits for the stream's next event.
func (s *sseStream) next(t *testing.T) gqlResponse {
	t.Helper()
	select {
	case g, ok := <-s.events:
		if !ok {
			t.Fatal("the stream completed before the event came")
		}
		return g
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return gqlResponse{}
}

// none checks no event comes within d.
func (s *sseStream) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case g, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %s", g.Data)
		}
	case <-time.After(d):
	}
}

// ended waits for the stream to complete.
func (s *sseStream) ended(t *testing.T) {
	t.Helper()
	select {
	case <-s.complete:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end within 5 s")
	}
}

func newUser(t testing.TB, st *sqlstore.Store, name string, private bool) *users.User {
	t.Helper()
	u, err := users.NewUser{Email: strings.ToLower(name) + "@example.com", Password: "a long passphrase", DisplayName: name, Private: private}.Prepare(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

const startSession = `query($cigar: ID, $brand: ID, $venue: ID, $vis: String!, $note: String) {
  startSmokeSession(cigarId: $cigar, brandId: $brand, venueId: $venue, visibility: $vis, note: $note, rating: 4.5) { id visibility note }
}`

// start records a session through the internal write field, as the shim does.
func (r *replica) start(u *users.User, vis, venue, brand string) string {
	r.t.Helper()
	vars := map[string]any{"vis": vis, "venue": venue, "brand": brand, "cigar": ids.Derive(ids.Cigar, "a"), "note": "Cedar and cocoa."}
	if venue == "" {
		delete(vars, "venue")
	}
	if brand == "" {
		delete(vars, "brand")
	}
	g := r.query("shim", trust.Identity{UserID: u.ID, Scopes: []string{"sessions:write"}}, startSession, vars)
	if len(g.Errors) > 0 {
		r.t.Fatalf("startSmokeSession: %+v", g.Errors)
	}
	var s struct{ ID string }
	json.Unmarshal(g.Data["startSmokeSession"], &s)
	return s.ID
}

func openStore(t *testing.T, db *sqldb.DB) *sqlstore.Store { return sqlstore.New(db) }

const sessionStartedQ = `subscription($venue: ID, $brand: ID) { sessionStarted(venue: $venue, brand: $brand) { id note rating featured user { id displayName } venue { id } cigar { id } } }`

func TestSessionStartedOverSSE(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		r := newReplica(t, st, bus.NewLocal(0))
		ana, priv := newUser(t, st, "Ana", false), newUser(t, st, "Bo", true)
		venue, other, brand := ids.Derive(ids.Venue, "b"), ids.Derive(ids.Venue, "c"), ids.Derive(ids.Brand, "d")

		byVenue := r.subscribe(trust.Identity{KeyID: "key_test"}, sessionStartedQ, map[string]any{"venue": venue})
		byBrand := r.subscribe(trust.Identity{KeyID: "key_test"}, sessionStartedQ, map[string]any{"brand": brand})
		if byVenue.status != http.StatusOK {
			t.Fatalf("subscribe status %d", byVenue.status)
		}
		r.waitSubscribed(2)

		// Privacy: a private session, and any session of a private profile,
		// never appear; nor do other venues' sessions.
		r.start(ana, "private", venue, brand)
		r.start(priv, "public", venue, brand)
		r.start(ana, "public", other, "")
		id := r.start(ana, "public", venue, brand)

		for _, s := range []*sseStream{byVenue, byBrand} {
			g := s.next(t)
			var ps struct {
				ID, Note string
				Rating   float64
				User     struct{ ID, DisplayName string }
				Venue    struct{ ID string }
			}
			if err := json.Unmarshal(g.Data["sessionStarted"], &ps); err != nil || len(g.Errors) > 0 {
				t.Fatalf("event %s %+v: %v", g.Data, g.Errors, err)
			}
			wantID := "pse_" + strings.TrimPrefix(id, "ses_")
			if ps.ID != wantID || ps.Note != "Cedar and cocoa." || ps.Rating != 4.5 || ps.User.ID != ana.ID || ps.User.DisplayName != "Ana" || ps.Venue.ID != venue {
				t.Fatalf("event %+v, want the public session %s of %s at %s", ps, wantID, ana.ID, venue)
			}
			s.none(t, 200*time.Millisecond)
		}
		// Clients that leave leave nothing behind.
		byVenue.cancel()
		byBrand.cancel()
		r.waitSubscribed(0)
	})
}

func TestSessionStartedNeedsAFilter(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		r := newReplica(t, openStore(t, db), bus.NewLocal(0))
		for _, tt := range []struct {
			vars map[string]any
			code string
		}{
			{map[string]any{}, "BAD_USER_INPUT"},
			{map[string]any{"venue": ids.Derive(ids.Brand, "d")}, "BAD_USER_INPUT"},
			{map[string]any{"brand": "nope"}, "BAD_USER_INPUT"},
		} {
			s := r.subscribe(trust.Identity{KeyID: "key_test"}, sessionStartedQ, tt.vars)
			if g := s.next(t); g.code() != tt.code {
				t.Errorf("%v: errors %+v, want %s", tt.vars, g.Errors, tt.code)
			}
			s.ended(t)
		}
		// A subscription in a plain JSON POST is refused at once, not held
		// until an event comes.
		start := time.Now()
		if g := r.query("router", trust.Identity{KeyID: "key_test"}, sessionStartedQ, map[string]any{"venue": ids.Derive(ids.Venue, "b")}); g.code() != "BAD_REQUEST" {
			t.Errorf("subscription over plain POST: %+v, want BAD_REQUEST", g.Errors)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("subscription over plain POST answered in %s", d)
		}
		// Without the internal token: 401, as every subgraph call.
		if s := r.subscribeWith("", sessionStartedQ, map[string]any{"venue": ids.Derive(ids.Venue, "b")}); s.status != http.StatusUnauthorized {
			t.Fatalf("no internal token: status %d, want 401", s.status)
		}
	})
}

// Closing the bus (a replica shutting down) ends every open stream with
// SHUTTING_DOWN, so that no stream holds the server open.
func TestStreamsEndWhenTheBusCloses(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		b := bus.NewLocal(0)
		r := newReplica(t, openStore(t, db), b)
		s := r.subscribe(trust.Identity{KeyID: "key_test"}, sessionStartedQ, map[string]any{"venue": ids.Derive(ids.Venue, "b")})
		r.waitSubscribed(1)
		b.Close()
		if g := s.next(t); g.code() != "SHUTTING_DOWN" {
			t.Fatalf("last event %s %+v, want SHUTTING_DOWN", g.Data, g.Errors)
		}
		s.ended(t)
	})
}

// A subscriber that stops reading (the router's side of the stream is stuck)
// is dropped once its bus buffer fills: its stream ends with SLOW_CONSUMER
// after what was already on the wire, and nothing buffers without bound.
func TestSlowConsumerIsDropped(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		b := bus.NewLocal(4)
		r := newReplicaOn(t, st, b, func(c net.Conn) {
			if rc, err := c.(*net.TCPConn).SyscallConn(); err == nil {
				rc.Control(smallBuffer(syscall.SO_SNDBUF))
			}
		})
		ana := newUser(t, st, "Ana", false)
		venue := ids.Derive(ids.Venue, "b")

		// A raw connection with a small receive buffer that reads nothing.
		u, _ := url.Parse(r.url)
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error { return c.Control(smallBuffer(syscall.SO_RCVBUF)) }}
		conn, err := d.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body, _ := json.Marshal(map[string]any{"query": sessionStartedQ, "variables": map[string]any{"venue": venue}})
		fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
			u.Host, trust.Header, token(t, "router", trust.Identity{KeyID: "key_test"}), len(body), body)
		r.waitSubscribed(1)

		note := strings.Repeat("long tasting note ", 110) // about 2 KB an event
		sent := 0
		for ; b.Stats().Dropped == 0; sent++ {
			if sent == 500 {
				t.Fatalf("500 events to a reader that reads nothing, and it was never dropped: %+v", b.Stats())
			}
			g := r.query("shim", trust.Identity{UserID: ana.ID, Scopes: []string{"sessions:write"}}, startSession,
				map[string]any{"vis": "public", "venue": venue, "note": note})
			if len(g.Errors) > 0 {
				t.Fatalf("startSmokeSession: %+v", g.Errors)
			}
		}
		r.waitSubscribed(0)

		// Reading now: what was on the wire, then the reason, then the end.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var last gqlResponse
		events, completed := 0, false
		sc := bufio.NewScanner(conn)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() && !completed {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data: "):
				last = gqlResponse{}
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &last)
				events++
			case line == "event: complete":
				completed = true
			}
		}
		t.Logf("dropped after %d events; %d reached the reader, the last one the reason", sent, events)
		if !completed || last.code() != "SLOW_CONSUMER" {
			t.Fatalf("after %d events (complete %v): last %+v, want a SLOW_CONSUMER error, then the end", events, completed, last.Errors)
		}
	})
}
