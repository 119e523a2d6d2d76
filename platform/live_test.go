package platform_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/platform"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// liveSSE opens a GraphQL-over-SSE subscription on /graphql; a refusal is
// the response with a nil reader.
func (f *fixture) liveSSE(t *testing.T, key, origin, query string, vars map[string]any) (*http.Response, *bufio.Reader) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/graphql", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-service-key", key)
	req.Header.Set("Origin", origin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		return res, nil
	}
	return res, bufio.NewReader(res.Body)
}

// nextSSE reads the stream to its next `event: next` and returns its data;
// "" at the stream's end, with the last comment seen.
func nextSSE(t *testing.T, rd *bufio.Reader) (data, comment string) {
	t.Helper()
	var event string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", comment
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, ":") && len(line) > 1:
			comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:") && event == "next":
			return strings.TrimSpace(line[len("data:"):]), comment
		}
	}
}

// TestLiveSessions: a website's publishable key subscribes to a venue's
// sessions over SSE and a connected user's app to its own over WebSocket
// (graphql-transport-ws); a session started through POST /v1/me/sessions
// reaches both with its cigar and venue resolved from their subgraphs. The
// per-key cap holds, and shutting the router down ends both streams with a
// reason.
func TestLiveSessions(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			f := openWith(t, cfg, func(o *platform.Options) { o.Subscriptions.PerKey = 1 })
			ctx := context.Background()
			const origin = "https://ember.example"
			_, pub, err := f.p.Keys.CreatePublishableKey(ctx, "widget", []string{origin})
			if err != nil {
				t.Fatal(err)
			}
			ana := usersdemo.UserID("ana@vitola.example")
			venue := venuesdemo.VenueID("The Ember Room")
			_, search := f.rest(t, "/v1/cigars/search?q=padron&limit=1")
			cigar, _ := at(search, "data", 0, "id").(string)

			live := `subscription Live($venue: ID) { sessionStarted(venue: $venue) { id note cigar { id name } venue { id name } } }`
			res, sse := f.liveSSE(t, pub, origin, live, map[string]any{"venue": venue})
			if sse == nil {
				t.Fatalf("SSE refused: %d", res.StatusCode)
			}
			if res.Header.Get("Access-Control-Allow-Origin") != origin {
				t.Fatalf("Access-Control-Allow-Origin %q", res.Header.Get("Access-Control-Allow-Origin"))
			}
			// The key holds its one subscription: a second is refused.
			if res, again := f.liveSSE(t, pub, origin, live, map[string]any{"venue": venue}); again != nil || res.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("a second subscription of the key: %d", res.StatusCode)
			}

			// The subgraph's refusal at subscribe time reaches the client with
			// its code, then the stream completes.
			if _, bad := f.liveSSE(t, f.key, "", `subscription { sessionStarted { id } }`, nil); bad == nil {
				t.Fatal("refused before subscribing")
			} else if d, _ := nextSSE(t, bad); !strings.Contains(d, `"code":"BAD_USER_INPUT"`) {
				t.Fatalf("sessionStarted without venue or brand: %q", d)
			} else if rest, _ := bad.ReadString(0); !strings.Contains(rest, "event: complete") {
				t.Fatalf("after the error: %q", rest)
			}

			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(wctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			send := func(m map[string]any) {
				b, _ := json.Marshal(m)
				if err := conn.Write(wctx, websocket.MessageText, b); err != nil {
					t.Fatal(err)
				}
			}
			read := func() (map[string]any, error) {
				_, b, err := conn.Read(wctx)
				var m map[string]any
				json.Unmarshal(b, &m)
				return m, err
			}
			send(map[string]any{"type": "connection_init", "payload": map[string]any{"x-service-key": f.key, "Authorization": "Bearer " + f.mint(t, ana, "sessions:read")}})
			if m, err := read(); err != nil || m["type"] != "connection_ack" {
				t.Fatalf("connection_init: %v %v", m, err)
			}
			send(map[string]any{"type": "subscribe", "id": "mine", "payload": map[string]any{"query": `subscription { mySmokeSessionStarted { id visibility cigar { name } } }`}})

			// Each source is subscribed once its subgraph stream is: start
			// sessions until one has reached the website and the app.
			write := f.mint(t, ana, "sessions:write")
			got := make(chan string, 1)
			go func() { d, _ := nextSSE(t, sse); got <- d }()
			app := make(chan map[string]any, 1)
			go func() { m, _ := read(); app <- m }()
			var data string
			var m map[string]any
			for deadline := time.Now().Add(20 * time.Second); (data == "" || m == nil) && time.Now().Before(deadline); {
				status, out := f.startSession(t, write, false, body(map[string]any{"cigarId": cigar, "venueId": venue, "visibility": "public", "note": "Live!"}))
				if status != 201 {
					t.Fatalf("start a session: %d %v", status, out)
				}
				wait := time.After(500 * time.Millisecond)
			collect:
				for data == "" || m == nil {
					select {
					case data = <-got:
					case m = <-app:
					case <-wait:
						break collect
					}
				}
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("no session reached the website: %q", data)
			}
			s := at(ev, "data", "sessionStarted")
			if at(s, "note") != "Live!" || at(s, "cigar", "id") != cigar || at(s, "cigar", "name") == nil || at(s, "venue", "id") != venue || at(s, "venue", "name") != "The Ember Room" {
				t.Fatalf("the website's event: %s", data)
			}
			if m["type"] != "next" || m["id"] != "mine" || at(m, "payload", "data", "mySmokeSessionStarted", "cigar", "name") == nil {
				t.Fatalf("the app's event: %v", m)
			}

			f.p.Router.Shutdown()
			d, comment := nextSSE(t, sse)
			for d != "" { // sessions started before may come first
				d, comment = nextSSE(t, sse)
			}
			if comment != "server shutting down" {
				t.Fatalf("SSE's last comment %q", comment)
			}
			for {
				_, err := read()
				if err == nil {
					continue
				}
				var ce websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "server shutting down" {
					t.Fatalf("WebSocket end: %v", err)
				}
				break
			}
		})
	}
}
