package main

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// TestShutdownClosesSubscriptions: when serve stops (SIGTERM cancels its
// context), an open WebSocket subscription is closed with 1001 "server
// shutting down" and an SSE stream ends with a comment saying so, instead of
// holding the shutdown or being cut without a word.
func TestShutdownClosesSubscriptions(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	serveUntil(t, ctx, addr, "--demo", "--data", data, "--payments-addr", loopbackAddr(t), "--public-url", "http://"+addr)
	key := strings.TrimSpace(readFile(t, filepath.Join(data, "demo-key.txt")))
	query := `{"query":"subscription { sessionStarted(venue: \"` + venuesdemo.VenueID("The Ember Room") + `\") { id } }"}`

	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(wctx, "ws://"+addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	for _, m := range []string{`{"type":"connection_init","payload":{"x-service-key":"` + key + `"}}`, `{"type":"subscribe","id":"1","payload":` + query + `}`} {
		if err := conn.Write(wctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, b, err := conn.Read(wctx); err != nil || !strings.Contains(string(b), "connection_ack") {
		t.Fatalf("connection_init: %s %v", b, err)
	}
	req, _ := http.NewRequestWithContext(wctx, http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(query))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-service-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("SSE: %v %v", res, err)
	}
	defer res.Body.Close()

	stopped := time.Now()
	stop()
	for {
		_, _, err := conn.Read(wctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "server shutting down" {
			t.Fatalf("WebSocket end: %v", err)
		}
		break
	}
	var sse strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		sse.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(sse.String(), ": server shutting down\n") {
		t.Fatalf("SSE stream: %q", sse.String())
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Fatalf("the streams took %s to end", took)
	}
}
