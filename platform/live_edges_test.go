package platform_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/platform"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// oauthGrant is a real grant of a user to a new client, as an app holds it.
type oauthGrant struct{ access, refresh, clientID, secret string }

func (f *fixture) grant(t *testing.T, userID string, scopes ...string) oauthGrant {
	t.Helper()
	ctx := context.Background()
	st, err := userssql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const cb = "https://app.example/cb"
	c, secret, err := oauth.NewClient("Live App", []string{cb}, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv := &oauth.Server{Issuer: publicURL, Users: st, Clients: st, Grants: st}
	verifier := "a-pkce-verifier-that-is-long-enough-0123456789"
	code, err := srv.IssueCode(ctx, c.ID, userID, cb, scopes, oauth.S256(verifier))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := srv.ExchangeCode(ctx, c.ID, secret, code, cb, verifier)
	if err != nil {
		t.Fatal(err)
	}
	return oauthGrant{access: tr.AccessToken, refresh: tr.RefreshToken, clientID: c.ID, secret: secret}
}

// revoke revokes a token as a client does (RFC 7009: POST /oauth/revoke, a
// form authenticated with the client's secret).
func (f *fixture) revoke(t *testing.T, g oauthGrant, token string) {
	t.Helper()
	form := url.Values{"token": {token}, "client_id": {g.clientID}, "client_secret": {g.secret}}
	res, err := http.PostForm(f.srv.URL+"/oauth/revoke", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /oauth/revoke: %d", res.StatusCode)
	}
}

// openSSE opens a GraphQL-over-SSE subscription and returns its reader once
// the router has answered (its first byte): the client is subscribed.
// stop closes it.
func (f *fixture) openSSE(t *testing.T, token, query string, vars map[string]any) (rd *bufio.Reader, stop func()) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/graphql", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-service-key", f.key)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("SSE refused: %d", res.StatusCode)
	}
	rd = bufio.NewReader(res.Body)
	if _, err := rd.Peek(1); err != nil {
		t.Fatalf("SSE: no first byte: %v", err)
	}
	return rd, func() { res.Body.Close() }
}

// sseEnd reads an SSE stream to its end (or until it has waited d): the
// data of its next events, and whether `event: complete` came.
func sseEnd(rd *bufio.Reader, d time.Duration) (nexts []string, complete bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var event string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(line[len("event:"):])
				if event == "complete" {
					complete = true
					return
				}
			case strings.HasPrefix(line, "data:") && event == "next":
				nexts = append(nexts, strings.TrimSpace(line[len("data:"):]))
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
	return nexts, complete
}

const mySessions = `subscription { mySmokeSessionStarted { id note } }`

// TestLiveRevocationThroughRouter: revoking the OAuth token a client opened
// mySmokeSessionStarted with (POST /oauth/revoke, as the app would) ends its
// stream through the public /graphql within seconds: SSE gets a next event
// with TOKEN_REVOKED then complete; graphql-transport-ws gets next with it,
// then complete. One SSE stream is revoked by its access token, the WebSocket
// one by its grant (the refresh token's family).
func TestLiveRevocationThroughRouter(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := open(t, cfg)
			ana := usersdemo.UserID("ana@vitola.example")
			bySSE, byWS := f.grant(t, ana, "sessions:read"), f.grant(t, ana, "sessions:read")

			// SSE, revoked right after the router answered: the subgraph's
			// stream is already listening for revocations.
			sse, _ := f.openSSE(t, bySSE.access, mySessions, nil)
			f.revoke(t, bySSE, bySSE.access)
			nexts, complete := sseEnd(sse, 5*time.Second)
			if len(nexts) != 1 || !strings.Contains(nexts[0], `"code":"TOKEN_REVOKED"`) || !complete {
				t.Fatalf("SSE after revocation: next %q, complete %v", nexts, complete)
			}

			// graphql-transport-ws.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			send := func(m map[string]any) {
				b, _ := json.Marshal(m)
				if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
					t.Fatal(err)
				}
			}
			read := func() map[string]any {
				_, b, err := conn.Read(ctx)
				if err != nil {
					t.Fatalf("WebSocket read: %v", err)
				}
				var m map[string]any
				json.Unmarshal(b, &m)
				return m
			}
			send(map[string]any{"type": "connection_init", "payload": map[string]any{"x-service-key": f.key, "Authorization": "Bearer " + byWS.access}})
			if m := read(); m["type"] != "connection_ack" {
				t.Fatalf("connection_init: %v", m)
			}
			send(map[string]any{"type": "subscribe", "id": "mine", "payload": map[string]any{"query": mySessions}})
			// graphql-transport-ws acknowledges no subscribe: start sessions of
			// hers until one reaches the app, which shows the stream is up.
			write := f.mint(t, ana, "sessions:write")
			cigar := f.firstCigar(t)
			app := make(chan map[string]any, 1)
			go func() { app <- read() }()
		wait:
			for tries := 0; ; tries++ {
				if tries == 40 {
					t.Fatal("no session reached the app")
				}
				status, out := f.startSession(t, write, false, body(map[string]any{"cigarId": cigar, "venueId": venuesdemo.VenueID("The Ember Room"), "visibility": "private", "note": "up"}))
				if status != 201 {
					t.Fatalf("start a session: %d %v", status, out)
				}
				select {
				case m := <-app:
					if m["type"] != "next" || at(m, "payload", "data", "mySmokeSessionStarted", "note") != "up" {
						t.Fatalf("the app's event: %v", m)
					}
					break wait
				case <-time.After(500 * time.Millisecond):
				}
			}
			f.revoke(t, byWS, byWS.refresh)
			deadline := time.Now().Add(5 * time.Second)
			rctx, rcancel := context.WithDeadline(ctx, deadline)
			defer rcancel()
			// Sessions started while waiting may come first; then the error,
			// then complete.
			var got []map[string]any
			for len(got) == 0 || got[len(got)-1]["type"] == "next" {
				_, b, err := conn.Read(rctx)
				if err != nil {
					t.Fatalf("WebSocket after revocation: %v (got %v)", err, got)
				}
				var m map[string]any
				json.Unmarshal(b, &m)
				got = append(got, m)
			}
			n := len(got)
			if n < 2 || at(got[n-2], "payload", "errors", 0, "extensions", "code") != "TOKEN_REVOKED" || got[n-1]["type"] != "complete" || got[n-1]["id"] != "mine" {
				t.Fatalf("WebSocket after revocation: %v", got)
			}
		})
	}
}

// slowStreams delays each streamed (SSE) request before passing it on.
type slowStreams struct {
	base  http.RoundTripper
	delay time.Duration
}

func (s slowStreams) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		time.Sleep(s.delay)
	}
	return s.base.RoundTrip(r)
}

// firstCigar is a cigar's ID from the demo catalogue.
func (f *fixture) firstCigar(t *testing.T) string {
	t.Helper()
	_, search := f.rest(t, "/v1/cigars/search?q=padron&limit=1")
	cigar, _ := at(search, "data", 0, "id").(string)
	if cigar == "" {
		t.Fatalf("no cigar: %v", search)
	}
	return cigar
}

// TestLiveSubscribedMeansListening: once the router has answered an SSE
// subscription (its first byte), a session started at once reaches it: the
// router answers only after its upstream stream to the users subgraph is
// established, and the subgraph only after its resolver listens to the bus.
//
// The router's upstream stream is made slow to connect (each streamed
// request to a subgraph waits 300 ms, as across a busy network), which
// without that guarantee loses many of the repro's sessions (19 of 50
// measured), not one in six.
func TestLiveSubscribedMeansListening(t *testing.T) {
	cfg := sqldbtest.Backends(t)[sqldb.SQLite]
	f := openWith(t, cfg, func(o *platform.Options) {
		o.WrapSubgraphTransport = func(rt http.RoundTripper) http.RoundTripper { return slowStreams{rt, 300 * time.Millisecond} }
	})
	ana := usersdemo.UserID("ana@vitola.example")
	read, write := f.mint(t, ana, "sessions:read"), f.mint(t, ana, "sessions:write")
	cigar := f.firstCigar(t)
	const runs = 50
	missed := 0
	for i := range runs {
		func() {
			// One stream at a time: the engine shares a caller's identical
			// subscriptions, and a second one would find the first's
			// upstream stream established.
			sse, stop := f.openSSE(t, read, mySessions, nil)
			defer stop()
			note := "run " + string(rune('A'+i%26)) + string(rune('a'+i/26))
			if status, out := f.startSession(t, write, false, body(map[string]any{"cigarId": cigar, "visibility": "private", "note": note})); status != 201 {
				t.Fatalf("start a session: %d %v", status, out)
			}
			got := make(chan string, 1)
			go func() { d, _ := nextSSE(t, sse); got <- d }()
			select {
			case d := <-got:
				if !strings.Contains(d, `"note":"`+note+`"`) {
					t.Fatalf("run %d: event %q", i, d)
				}
			case <-time.After(2 * time.Second):
				missed++
			}
		}()
	}
	if missed > 0 {
		t.Fatalf("%d of %d sessions started right after subscribing never arrived", missed, runs)
	}
}
