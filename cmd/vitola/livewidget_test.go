package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/sdk/sdktest"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// TestLiveWidgetAcrossReplicas (issue 40 item 3): two `vitola serve`
// processes over one PostgreSQL database and one Redis, as two replicas
// behind a load balancer. Debian's chromium shows the website widget in live
// mode, served by the first replica and calling its API; a user's app starts
// a session through POST /v1/me/sessions on the second; the widget shows it
// within two seconds, without reloading. Only PostgreSQL and Redis join the
// two processes.
func TestLiveWidgetAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two platforms and a browser")
	}
	sdktest.Require(t, "chromium")
	adminURL, redisURL := topologyServices(t)
	dbURL := createTestDatabase(t, adminURL)
	prefix := "vitola-test:live-widget:" + randomHex(6) + ":"
	t.Cleanup(func() { deleteRedisPrefix(t, redisURL, prefix) })

	first, second := loopbackAddr(t), loopbackAddr(t)
	page := "http://" + first
	env := []string{"DATABASE_URL=" + dbURL, "REDIS_URL=" + redisURL, "VITOLA_REDIS_PREFIX=" + prefix,
		"VITOLA_INTERNAL_KEY=live-widget-test-internal-key-0123456789", "VITOLA_PUBLIC_URL=" + page}
	// The second starts once the first has seeded the demo data.
	for _, addr := range []string{first, second} {
		p := startProc(t, "serve "+addr, []string{"serve", "--demo", "--addr", addr, "--payments-addr", loopbackAddr(t), "--log-format", "json"}, env, nil)
		waitHealthy(t, p, "http://"+addr+"/health/ready")
	}
	cli := func(args ...string) string {
		t.Helper()
		line, err := admin(t, append(args, "--database-url", dbURL)...)
		if err != nil {
			t.Fatalf("vitola %s: %v", strings.Join(args, " "), err)
		}
		return line
	}
	// The venue's website: a publishable key for the page's origin. The user's
	// app: a secret key and the user's access token with sessions:write.
	widgetKey := cli("keys", "create", "--name", "website", "--publishable", "--origin", page)
	appKey := cli("keys", "create", "--name", "app")
	cli("users", "create", "--email", "ana@example.com", "--password", "correct horse battery", "--display-name", "Ana Live")
	client := strings.Fields(cli("oauth", "clients", "create", "--name", "Humidor App", "--redirect-uri", "https://app.example/callback"))[0]
	token := cli("oauth", "token", "--user", "ana@example.com", "--client", client, "--scope", "sessions:write", "--public-url", page)

	venue := venuesdemo.VenueID("The Ember Room")
	// The page's API is the first replica under another name: a website calls
	// the API cross-origin (CORS preflights and all), and a publishable key
	// needs the Origin header that brings.
	api := strings.Replace(page, "127.0.0.1", "localhost", 1)
	q := url.Values{"api": {api}, "key": {widgetKey}, "venue": {venue}, "live": {"true"}}
	headers, _ := json.Marshal(map[string]string{"x-service-key": appKey, "authorization": "Bearer " + token, "content-type": "application/json"})
	body, _ := json.Marshal(map[string]any{"venueId": venue, "visibility": "public", "rating": 4.5, "note": "Live from the other replica"})
	var seen struct {
		ID            string
		Before, After int
		First         string
		ElapsedMs     int
		Status        string
		LiveStatus    string
		Navigations   int
		Error         string
		PageErrors    []string
	}
	sdktest.RunBrowser(t, "widget-live.mjs", []string{
		"WIDGET_URL=" + page + "/examples/widget/?" + q.Encode(),
		"START_URL=http://" + second + "/v1/me/sessions",
		"START_FEED=http://" + second + "/venues/" + venue + "/sessions?limit=20",
		"START_HEADERS=" + string(headers),
		"START_BODY=" + string(body),
	}, &seen)
	t.Logf("the browser saw: %+v", seen)
	if seen.Error != "" {
		t.Fatalf("the started session did not show: %s", seen.Error)
	}
	if !strings.HasPrefix(seen.ID, "ses_") || seen.First != seen.ID || seen.After != seen.Before {
		t.Errorf("the new session %q is not on top of the %d shown (top %q, now %d)", seen.ID, seen.Before, seen.First, seen.After)
	}
	// The bound: on the page within two seconds of the write.
	if seen.ElapsedMs < 0 || seen.ElapsedMs > 2000 {
		t.Errorf("shown %d ms after the write, want within 2000", seen.ElapsedMs)
	}
	if seen.Navigations != 0 || seen.Status != "" || seen.LiveStatus != "live" || len(seen.PageErrors) > 0 {
		t.Errorf("the page reloaded %d times, status %q, live %q, page errors %q", seen.Navigations, seen.Status, seen.LiveStatus, seen.PageErrors)
	}
}
