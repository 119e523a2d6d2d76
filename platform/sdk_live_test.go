package platform_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/sdk/sdktest"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
	venuesdemo "github.com/vitolahq/vitola/subgraphs/venues/demo"
)

// subscribeSessions against the server in Node (sdk/test/e2e-live.test.ts run
// by vitest): a session started through POST /v1/me/sessions arrives once, as
// the feed shows it, over SSE and WebSocket, to a venue's and a brand's
// subscribers, and through a dropped connection (read back from the feed); on SQLite with the in-process
// event bus, and on PostgreSQL with the Redis one.
func TestSDKLiveAgainstTheServer(t *testing.T) {
	sdktest.Require(t)
	t.Run("sqlite", func(t *testing.T) {
		runSDKLive(t, sqldb.Config{DataDir: t.TempDir()}, "", "")
	})
	t.Run("postgres+redis", func(t *testing.T) {
		cfg, ok := sqldbtest.Postgres(t)
		if !ok {
			t.Skip("missing PostgreSQL: set VITOLA_TEST_DATABASE_URL")
		}
		runSDKLive(t, cfg, kvtest.RedisURL(t), kvtest.Prefix("sdk-live"))
	})
}

func runSDKLive(t *testing.T, cfg sqldb.Config, redisURL, redisPrefix string) {
	srvs, p := liveReplicas(t, cfg, redisURL, redisPrefix, 1)
	api := srvs[0].URL
	// POST here drops every open connection to the server, as a network would.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srvs[0].CloseClientConnections()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(drop.Close)
	_, key, err := p.Keys.CreateKey(context.Background(), "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	venue := venuesdemo.VenueID("The Ember Room")
	out := sdktest.Run(t, []string{
		"VITOLA_SDK_E2E_URL=" + api,
		"VITOLA_SDK_E2E_DROP=" + drop.URL,
		"VITOLA_SDK_E2E_KEY=" + key,
		"VITOLA_SDK_E2E_VENUE=" + venue,
		"VITOLA_SDK_E2E_CIGAR=" + feedCigar(t, api, key, venue),
		"VITOLA_SDK_E2E_TOKEN=" + sessionsWriteToken(t, cfg, api),
	}, "npx", "vitest", "run", "test/e2e-live.test.ts")
	// vitest exits zero when every test skips: make sure they ran.
	if !strings.Contains(out, "5 passed") {
		t.Fatalf("the live end-to-end tests did not run:\n%s", out)
	}
}

// The website widget in live mode across replicas (issue 40 item 3): two
// platforms over one PostgreSQL store and one Redis, as two replicas of
// `vitola serve` are. Debian's chromium shows the widget served by the first
// replica (its API there too); a user's app starts a session through
// POST /v1/me/sessions on the second; the widget shows it within two seconds,
// without reloading. The event crosses replicas only through Redis (each
// platform has an event bus of its own).
func TestLiveWidgetAcrossReplicas(t *testing.T) {
	sdktest.Require(t, "chromium")
	cfg, ok := sqldbtest.Postgres(t)
	if !ok {
		t.Skip("missing PostgreSQL: the replicas share one store (set VITOLA_TEST_DATABASE_URL)")
	}
	redisURL := kvtest.RedisURL(t)
	prefix := kvtest.Prefix("live-widget")
	ctx := context.Background()

	replicas, first := liveReplicas(t, cfg, redisURL, prefix, 2)
	page, other := replicas[0].URL, replicas[1].URL
	venue := venuesdemo.VenueID("The Ember Room")

	// The venue's website: a publishable key for the page's origin.
	_, widgetKey, err := first.Keys.CreatePublishableKey(ctx, "widget", []string{page})
	if err != nil {
		t.Fatal(err)
	}
	// The user's app: a secret key and an access token with sessions:write.
	_, appKey, err := first.Keys.CreateKey(ctx, "app", nil)
	if err != nil {
		t.Fatal(err)
	}
	token := sessionsWriteToken(t, cfg, page)

	cigar := feedCigar(t, other, appKey, venue)

	// The page's API is the same replica under another name: a website calls
	// the API cross-origin (CORS preflights and all), as the widget's own
	// test does, and a publishable key needs the Origin header that brings.
	api := strings.Replace(page, "127.0.0.1", "localhost", 1)
	q := url.Values{"api": {api}, "key": {widgetKey}, "venue": {venue}, "live": {"true"}}
	headers, _ := json.Marshal(map[string]string{"x-service-key": appKey, "authorization": "Bearer " + token, "content-type": "application/json"})
	body, _ := json.Marshal(map[string]any{"cigarId": cigar, "venueId": venue, "visibility": "public", "rating": 4.5, "note": "Live from the other replica"})
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
		"START_URL=" + other + "/v1/me/sessions",
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

// feedCigar returns a cigar to smoke: one of a session the venue's feed shows.
func feedCigar(t *testing.T, api, key, venue string) string {
	t.Helper()
	var feed struct {
		Data []struct {
			Cigar *struct{ ID string } `json:"cigar"`
		} `json:"data"`
	}
	req, _ := http.NewRequest(http.MethodGet, api+"/venues/"+venue+"/sessions?limit=20", nil)
	req.Header.Set("x-service-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(res.Body).Decode(&feed)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the venue's feed: %d %v", res.StatusCode, err)
	}
	for _, s := range feed.Data {
		if s.Cigar != nil {
			return s.Cigar.ID
		}
	}
	t.Fatalf("the demo venue's feed has no session with a cigar: %+v", feed)
	return ""
}

// liveReplicas opens n platforms over one store (and one Redis when redisURL
// is set), each behind its own server, all with the first one's URL as their
// public URL (a load balancer's). It returns their servers and the first
// platform.
func liveReplicas(t *testing.T, cfg sqldb.Config, redisURL, redisPrefix string, n int) ([]*httptest.Server, *platform.Platform) {
	t.Helper()
	var srvs []*httptest.Server
	var first *platform.Platform
	for i := range n {
		srv := httptest.NewServer(nil)
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
		p, err := platform.Open(context.Background(), platform.Options{
			Store: cfg, RedisURL: redisURL, RedisPrefix: redisPrefix, InternalKey: internalKey, Demo: true, PublicURL: srvs[0].URL,
			Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		srv.Config.Handler = p.API
		if i == 0 {
			first = p
		}
	}
	return srvs, first
}

// sessionsWriteToken makes a user (a public profile, as by default) and
// returns an access token of theirs with sessions:write, from the
// authorization code flow as an app gets it.
func sessionsWriteToken(t *testing.T, cfg sqldb.Config, issuer string) string {
	t.Helper()
	ctx := context.Background()
	st, err := userssql.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := users.NewUser{Email: "flow@example.com", Password: "correct horse battery", DisplayName: "Flo Live"}.Prepare(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	client, secret, err := oauth.NewClient("Humidor App", []string{redirectURI}, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateClient(ctx, client); err != nil {
		t.Fatal(err)
	}
	conf := &oauth2.Config{
		ClientID: client.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: []string{"profile:read", "email:read", "sessions:write"},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/oauth/authorize", TokenURL: issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
	verifier := oauth2.GenerateVerifier()
	code := browserConsent(t, issuer, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "correct horse battery", "allow")
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}
