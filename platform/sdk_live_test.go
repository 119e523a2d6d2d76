package platform_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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
// subscribers, and through a dropped connection (read back from the feed); on
// SQLite with the in-process event bus, and on PostgreSQL with the Redis one.
// (The widget in Chromium across two replicas: cmd/vitola's
// TestLiveWidgetAcrossReplicas.)
func TestSDKLiveAgainstTheServer(t *testing.T) {
	sdktest.Require(t)
	t.Run("sqlite", func(t *testing.T) {
		runSDKLive(t, sqldb.Config{DataDir: t.TempDir()}, "", "")
	})
	t.Run("postgres+redis", func(t *testing.T) {
		cfg, ok := sqldbtest.Postgres(t) // fails in CI; logs what is missing otherwise
		if !ok {
			return
		}
		runSDKLive(t, cfg, kvtest.RedisURL(t), kvtest.Prefix("sdk-live"))
	})
}

func runSDKLive(t *testing.T, cfg sqldb.Config, redisURL, redisPrefix string) {
	srv, p := livePlatform(t, cfg, redisURL, redisPrefix)
	api := srv.URL
	// POST here drops every open connection to the server, as a network would.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.CloseClientConnections()
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
		"VITOLA_SDK_E2E_TOKEN=" + sessionsWriteToken(t, cfg, api),
	}, "npx", "vitest", "run", "test/e2e-live.test.ts")
	// vitest exits zero when every test skips: make sure they ran.
	if !strings.Contains(out, "5 passed") {
		t.Fatalf("the live end-to-end tests did not run:\n%s", out)
	}
}

// livePlatform opens a platform behind a server whose URL is its public URL
// (the OAuth issuer), with Redis when redisURL is set.
func livePlatform(t *testing.T, cfg sqldb.Config, redisURL, redisPrefix string) (*httptest.Server, *platform.Platform) {
	t.Helper()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	p, err := platform.Open(context.Background(), platform.Options{
		Store: cfg, RedisURL: redisURL, RedisPrefix: redisPrefix, InternalKey: internalKey, Demo: true, PublicURL: srv.URL,
		Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv.Config.Handler = p.API
	return srv, p
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
