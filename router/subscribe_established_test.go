package router_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/router"
	"github.com/vitolahq/vitola/router/limits"
)

// TestSubscriptionAnsweredOnceUpstreamIs: the router answers an SSE
// subscription only once its upstream stream to the owning subgraph is
// established (the subgraph has answered), so an event published after the
// client saw its answer reaches it. Here the subgraph listens at once but
// answers only when released: an event published meanwhile comes first.
func TestSubscriptionAnsweredOnceUpstreamIs(t *testing.T) {
	e := newLiveEnv(t, router.SubscriptionSettings{}, limits.Defaults())
	e.sessions.hold = make(chan struct{})
	raw, _ := json.Marshal(map[string]any{"query": sessionsByVenue, "variables": map[string]any{"venue": "v1"}})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(access.Header, secretKey)
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		answered <- answer{resp, err}
	}()
	e.sessions.waitStreams(t, 1)
	e.sessions.publish(session("s1", "v1", "c1"))
	select {
	case a := <-answered:
		if a.err == nil {
			a.resp.Body.Close()
		}
		t.Fatalf("the router answered (%v) before its upstream stream was established", a.err)
	case <-time.After(300 * time.Millisecond):
	}
	close(e.sessions.hold)
	var a answer
	select {
	case a = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer once the upstream stream was established")
	}
	if a.err != nil || a.resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %v %v", a.resp, a.err)
	}
	defer a.resp.Body.Close()
	st := &sseStream{resp: a.resp, rd: bufio.NewReader(a.resp.Body)}
	ev := st.nextEvent(t)
	for ev.event == "" {
		ev = st.nextEvent(t)
	}
	if ev.event != "next" {
		t.Fatalf("event %q (%s), want next", ev.event, ev.data)
	}
	sameJSON(t, ev.data, `{"data":{"sessionStarted":{"id":"s1","venue":"v1","cigar":{"id":"c1","name":"Cigar c1"}}}}`)
}

// TestSubscriptionUpstreamMustBeSSE: a composition whose subscriptions would
// stream to the router over a WebSocket is refused when loaded (the router
// could not tell when a subscription is established), with the subgraph named.
func TestSubscriptionUpstreamMustBeSSE(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		ok       bool
	}{
		{"GRAPHQL_SUBSCRIPTION_PROTOCOL_SSE_POST", true},
		{"GRAPHQL_SUBSCRIPTION_PROTOCOL_SSE", true},
		{"GRAPHQL_SUBSCRIPTION_PROTOCOL_WS", false},
	} {
		var rc map[string]any
		if err := json.Unmarshal(compositionConfig(t, "subscription"), &rc); err != nil {
			t.Fatal(err)
		}
		for _, ds := range rc["engineConfig"].(map[string]any)["datasourceConfigurations"].([]any) {
			sub := ds.(map[string]any)["customGraphql"].(map[string]any)["subscription"].(map[string]any)
			sub["protocol"] = tt.protocol
		}
		raw, _ := json.Marshal(rc)
		_, err := router.LoadComposed(raw, nil)
		if (err == nil) != tt.ok || err != nil && !strings.Contains(err.Error(), "subgraph sessions streams its subscriptions over") {
			t.Errorf("%s: %v", tt.protocol, err)
		}
	}
}
