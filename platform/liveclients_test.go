package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// TestLiveSessionsNodeClients: the npm clients frontend apps use (graphql-ws
// over WebSocket with a secret key, graphql-sse with a publishable key from
// its origin; pinned in tools/graphql-clients, installed by `make tools`)
// subscribe to a venue's sessions on the live server and receive one started
// through POST /v1/me/sessions, its cigar and venue resolved.
func TestLiveSessionsNodeClients(t *testing.T) {
	dir := os.Getenv("VITOLA_GRAPHQL_CLIENTS")
	if dir == "" {
		dir, _ = filepath.Abs("../.cache/tools/graphql-clients")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-ws", "package.json")); err != nil {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("the graphql clients are not installed in %s: run `make tools`", dir)
		}
		t.Skipf("missing the graphql clients: not installed in %s; `make test` installs them", dir)
	}
	f := open(t, sqldb.Config{DataDir: t.TempDir()})
	const origin = "https://ember.example"
	_, pub, err := f.p.Keys.CreatePublishableKey(context.Background(), "widget", []string{origin})
	if err != nil {
		t.Fatal(err)
	}
	venue := venuesdemo.VenueID("The Ember Room")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../tools/graphql-clients/live.mjs")
	cmd.Env = append(os.Environ(), "VITOLA_LIVE_URL="+f.srv.URL+"/graphql", "VITOLA_LIVE_KEY="+f.key, "VITOLA_LIVE_PUBLISHABLE="+pub,
		"VITOLA_LIVE_ORIGIN="+origin, "VITOLA_LIVE_VENUE="+venue, "VITOLA_GRAPHQL_CLIENTS="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Start sessions until both clients have one: the first may come before
	// they have subscribed.
	write := f.mint(t, usersdemo.UserID("ana@vitola.example"), "sessions:write")
	_, search := f.rest(t, "/v1/cigars/search?q=padron&limit=1")
	start := body(map[string]any{"cigarId": at(search, "data", 0, "id"), "venueId": venue, "visibility": "public", "note": "From Node."})
	var runErr error
wait:
	for {
		if status, out := f.startSession(t, write, false, start); status != 201 {
			t.Fatalf("start a session: %d %v", status, out)
		}
		select {
		case runErr = <-done:
			break wait
		case <-time.After(500 * time.Millisecond):
		}
	}
	if runErr != nil {
		t.Fatalf("the clients failed: %v\n%s", runErr, stderr.Bytes())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("the clients' output is not JSON: %s\n%s", stdout.Bytes(), stderr.Bytes())
	}
	for _, client := range []string{"ws", "sse"} {
		s := at(got, client, "data", "sessionStarted")
		if at(s, "note") != "From Node." || at(s, "venue", "name") != "The Ember Room" || at(s, "cigar", "name") == nil {
			t.Errorf("%s: %v", client, at(got, client))
		}
	}
}
