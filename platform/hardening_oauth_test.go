package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/platform"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// Token lifetimes across replicas (issue 17, item 8): two platforms over one
// shared store, as two replicas of the scale-out shape are; the OAuth client is
// golang.org/x/oauth2 and talks to the first, the API is called on both.

// TestOAuthCodeReplayRevokesItsTokens: an authorization code used twice is
// refused, and the tokens already issued from it stop working (RFC 6749
// §4.1.2), on every replica within a second.
func TestOAuthCodeReplayRevokesItsTokens(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			e := newOAuthReplicas(t, cfg)
			verifier := oauth2.GenerateVerifier()
			code := browserConsent(t, e.replicas[0].URL, e.conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "correct horse battery", "allow")
			tok, err := e.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatal(err)
			}
			e.requireWorks(t, tok.AccessToken) // every replica has cached "live"

			_, err = e.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.Response.StatusCode != http.StatusBadRequest {
				t.Fatalf("replayed code: %v, want 400 invalid_grant", err)
			}
			e.requireRefusedWithinASecond(t, tok.AccessToken, time.Now())
			if _, err := e.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
				t.Fatalf("the refresh token issued from a replayed code still works: %v", err)
			}
		})
	}
}

// TestOAuthRefreshRevocationRevokesAccessTokens: revoking a refresh token
// (RFC 7009) revokes its family's live access tokens, and so does presenting a
// used refresh token again (reuse detection), on every replica within a second.
func TestOAuthRefreshRevocationRevokesAccessTokens(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			e := newOAuthReplicas(t, cfg)
			tokens := func() *oauth2.Token {
				verifier := oauth2.GenerateVerifier()
				code := browserConsent(t, e.replicas[0].URL, e.conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "correct horse battery", "allow")
				tok, err := e.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}

			// Revocation of the refresh token.
			tok := tokens()
			other := tokens() // another grant of the same user and client
			e.requireWorks(t, tok.AccessToken)
			e.revoke(t, tok.RefreshToken)
			e.requireRefusedWithinASecond(t, tok.AccessToken, time.Now())
			e.requireWorks(t, other.AccessToken) // only that grant is revoked

			// Reuse detection: the old refresh token presented again revokes the
			// family, the access token of its rotation included.
			rotated, err := e.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: other.RefreshToken}).Token()
			if err != nil {
				t.Fatal(err)
			}
			e.requireWorks(t, rotated.AccessToken)
			if _, err := e.conf.TokenSource(ctx, &oauth2.Token{RefreshToken: other.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
				t.Fatalf("refresh token reuse: %v", err)
			}
			at := time.Now()
			e.requireRefusedWithinASecond(t, rotated.AccessToken, at)
			e.requireRefusedWithinASecond(t, other.AccessToken, at)
		})
	}
}

// oauthReplicas are two platforms over one store, each behind its own server,
// both with the first one's URL as the issuer (a load balancer's public URL).
type oauthReplicas struct {
	replicas []*httptest.Server
	conf     *oauth2.Config
	devKey   string
	userID   string
	revokeAt string
}

func newOAuthReplicas(t *testing.T, cfg sqldb.Config) *oauthReplicas {
	t.Helper()
	ctx := context.Background()
	e := &oauthReplicas{}
	var issuer string
	for i := range 2 {
		srv := httptest.NewServer(nil)
		t.Cleanup(srv.Close)
		if i == 0 {
			issuer = srv.URL
		}
		p, err := platform.Open(ctx, platform.Options{Store: cfg, InternalKey: internalKey, PublicURL: issuer, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		srv.Config.Handler = p.API
		e.replicas = append(e.replicas, srv)
		if i == 0 {
			_, e.devKey, _ = p.Keys.CreateKey(ctx, "app", nil)
		}
	}
	st, err := userssql.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, _ := users.NewUser{Email: "flow@example.com", Password: "correct horse battery", DisplayName: "Flo"}.Prepare(time.Now())
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	e.userID = u.ID
	client, secret, _ := oauth.NewClient("Humidor App", []string{redirectURI}, false, time.Now())
	if err := st.CreateClient(ctx, client); err != nil {
		t.Fatal(err)
	}
	e.conf = &oauth2.Config{
		ClientID: client.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: []string{"profile:read", "email:read"},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/oauth/authorize", TokenURL: issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
	e.revokeAt = issuer + "/oauth/revoke"
	return e
}

func (e *oauthReplicas) revoke(t *testing.T, token string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.revokeAt, strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(e.conf.ClientID, e.conf.ClientSecret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
}

// refusal says how a replica answered a token on /v1/me and on /graphql's me:
// "" when both served the user, else what went wrong.
func (e *oauthReplicas) refusal(t *testing.T, base, token string) (me, graphql string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/me", nil)
	req.Header.Set("x-service-key", e.devKey)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != 200 || at(body, "data", "id") != e.userID {
		me = fmt.Sprintf("%d %v", res.StatusCode, body["error"])
	}

	req, _ = http.NewRequest("POST", base+"/graphql", strings.NewReader(`{"query":"{ me { id } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-service-key", e.devKey)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var gql map[string]any
	json.NewDecoder(res.Body).Decode(&gql)
	res.Body.Close()
	if at(gql, "data", "me", "id") != e.userID {
		graphql = fmt.Sprintf("%d %v", res.StatusCode, at(gql, "errors", 0, "extensions", "code"))
	}
	return me, graphql
}

func (e *oauthReplicas) requireWorks(t *testing.T, token string) {
	t.Helper()
	for i, r := range e.replicas {
		if me, gql := e.refusal(t, r.URL, token); me != "" || gql != "" {
			t.Fatalf("replica %d refuses a live token: /v1/me %s, /graphql %s", i, me, gql)
		}
	}
}

// requireRefusedWithinASecond checks that every replica refuses token on
// both /v1/me (401 invalid_token) and /graphql (UNAUTHENTICATED) a second
// after since: requests that start then, so that a busy machine cannot make
// the check late (verdicts are cached half a second).
func (e *oauthReplicas) requireRefusedWithinASecond(t *testing.T, token string, since time.Time) {
	t.Helper()
	time.Sleep(time.Until(since.Add(time.Second)))
	for i, r := range e.replicas {
		if me, gql := e.refusal(t, r.URL, token); me != "401 invalid_token" || gql != "200 UNAUTHENTICATED" {
			t.Fatalf("replica %d still serves a revoked access token after a second: /v1/me %q, /graphql %q", i, me, gql)
		}
	}
}
