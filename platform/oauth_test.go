package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
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

const redirectURI = "https://app.example/callback"

// TestOAuthFlow drives the authorization server with a real OAuth client
// (golang.org/x/oauth2) and a browser-like client that fills in the real HTML
// forms.
func TestOAuthFlow(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) { oauthFlow(t, cfg) })
	}
}

func oauthFlow(t *testing.T, cfg sqldb.Config) {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	p, err := platform.Open(ctx, platform.Options{Store: cfg, InternalKey: internalKey, PublicURL: srv.URL, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv.Config.Handler = p.API
	_, devKey, _ := p.Keys.CreateKey(ctx, "app", nil)

	st, err := userssql.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, _ := users.NewUser{Email: "flow@example.com", Password: "correct horse battery", DisplayName: "Flo"}.Prepare(time.Now())
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	client, secret, _ := oauth.NewClient("Humidor App", []string{redirectURI}, false, time.Now())
	if err := st.CreateClient(ctx, client); err != nil {
		t.Fatal(err)
	}

	// Discovery (RFC 8414).
	var meta struct{ AuthorizationEndpoint, TokenEndpoint, RevocationEndpoint string }
	var m map[string]any
	getJSON(t, srv.URL+"/.well-known/oauth-authorization-server", &m)
	meta.AuthorizationEndpoint, _ = m["authorization_endpoint"].(string)
	meta.TokenEndpoint, _ = m["token_endpoint"].(string)
	meta.RevocationEndpoint, _ = m["revocation_endpoint"].(string)
	if m["issuer"] != srv.URL || meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" || !strings.Contains(toJSON(m["code_challenge_methods_supported"]), "S256") {
		t.Fatalf("metadata %v", m)
	}

	conf := &oauth2.Config{
		ClientID: client.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: []string{"profile:read", "email:read"},
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader},
	}
	verifier := oauth2.GenerateVerifier()
	code := browserConsent(t, srv.URL, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)), "correct horse battery", "allow")

	// A wrong verifier fails, and so does the code after its first use.
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("wrong verifier: %v", err)
	}
	code = browserConsent(t, srv.URL, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)), "", "allow") // signed in already
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err != nil {
		t.Fatal(err)
	}
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("code reuse: %v", err)
	}
	// The replay revoked what the code issued (hardening_oauth_test.go): go on
	// with a new grant.
	code = browserConsent(t, srv.URL, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)), "", "allow")
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("scope") != "profile:read email:read" {
		t.Fatalf("token %+v", tok)
	}

	// The token reads the user, email included.
	me := func(access string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/me", nil)
		req.Header.Set("x-service-key", devKey)
		req.Header.Set("Authorization", "Bearer "+access)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	if status, body := me(tok.AccessToken); status != 200 || at(body, "data", "email") != "flow@example.com" {
		t.Fatalf("/v1/me: %d %v", status, body)
	}

	// Refresh rotates the refresh token.
	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || refreshed.RefreshToken == tok.RefreshToken || refreshed.AccessToken == "" {
		t.Fatalf("refresh: %+v, %v", refreshed, err)
	}
	revoke := func(clientID, clientSecret, token string) {
		form := url.Values{"token": {token}}
		req, _ := http.NewRequest("POST", meta.RevocationEndpoint, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(clientID, clientSecret)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("revoke: %v %v", res, err)
		}
		res.Body.Close()
	}

	// Another client cannot revoke this client's refresh tokens.
	other, otherSecret, _ := oauth.NewClient("Other App", []string{redirectURI}, false, time.Now())
	if err := st.CreateClient(ctx, other); err != nil {
		t.Fatal(err)
	}
	revoke(other.ID, otherSecret, refreshed.RefreshToken)
	again, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("another client revoked this client's refresh token: %v", err)
	}

	// Presenting the old refresh token again revokes the whole family.
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("refresh token reuse: %v", err)
	}
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: again.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("the family survived a reuse: %v", err)
	}
	// The reuse revoked the family's access tokens too
	// (hardening_oauth_test.go): go on with a new grant.
	code = browserConsent(t, srv.URL, conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)), "", "allow")
	live, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}

	// The user's own profile through user(id:), email included, needs a live token.
	ownEmail := func(access string) any {
		body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { user(id: $id) { email } }`, "variables": map[string]any{"id": u.ID}})
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-service-key", devKey)
		req.Header.Set("Authorization", "Bearer "+access)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		return at(out, "data", "user", "email")
	}
	if email := ownEmail(live.AccessToken); email != "flow@example.com" {
		t.Fatalf("own email through user(id:): %v", email)
	}

	// Revoking an access token stops it within a second, on every path: a
	// request that starts a second after is refused, however busy the
	// machine (verdicts are cached half a second).
	revoke(client.ID, secret, live.AccessToken)
	time.Sleep(time.Second)
	if status, _ := me(live.AccessToken); status != 401 {
		t.Fatalf("a revoked access token still works after a second: %d", status)
	}
	if email := ownEmail(live.AccessToken); email != nil {
		t.Fatalf("a revoked token still reads the email through user(id:): %v", email)
	}

	// A wrong client secret is invalid_client.
	bad := *conf
	bad.ClientSecret = "cs_wrong"
	if _, err := bad.Exchange(ctx, "whatever", oauth2.VerifierOption(verifier)); !isOAuthError(err, "invalid_client") {
		t.Fatalf("wrong secret: %v", err)
	}

	// Refusals before and during the flow.
	jarClient := browser(t)
	res, _ := jarClient.Get(strings.Replace(conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), url.QueryEscape(redirectURI), url.QueryEscape("https://evil.example/cb"), 1))
	if res.StatusCode != 400 || res.Header.Get("Location") != "" {
		t.Fatalf("unregistered redirect URI: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, _ = jarClient.Get(conf.AuthCodeURL("s")) // no PKCE
	if loc, _ := url.Parse(res.Header.Get("Location")); res.StatusCode != 302 || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("state") != "s" {
		t.Fatalf("missing PKCE: %d %v", res.StatusCode, res.Header.Get("Location"))
	}
	res, _ = jarClient.PostForm(srv.URL+"/oauth/login", url.Values{"email": {"flow@example.com"}, "password": {"correct horse battery"}})
	if res.StatusCode != 403 {
		t.Fatalf("login without the CSRF token: %d", res.StatusCode)
	}
	denied := browserConsent(t, srv.URL, conf.AuthCodeURL("d", oauth2.S256ChallengeOption(verifier)), "correct horse battery", "deny")
	if denied != "" {
		t.Fatalf("a denied consent produced a code")
	}

	// Password guessing is cut off per account: after the allowance, even the
	// right password gets "too many attempts" until the window ends.
	guesser := browser(t)
	status := 0
	for i := range 12 {
		res, _ := guesser.Get(conf.AuthCodeURL("g", oauth2.S256ChallengeOption(verifier)))
		form := formOf(t, res)
		form.Set("email", "FLOW@example.com")
		form.Set("password", "guess "+strconv.Itoa(i))
		res, err := guesser.PostForm(srv.URL+"/oauth/login", form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		status = res.StatusCode
	}
	if status != http.StatusTooManyRequests {
		t.Fatalf("after 12 wrong passwords: %d, want 429", status)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func isOAuthError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}

// browser is a client with cookies that stops at redirects off the server.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

func formOf(t *testing.T, res *http.Response) url.Values {
	t.Helper()
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	v := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	if v.Get("csrf") == "" {
		t.Fatalf("no form in the page (%d):\n%s", res.StatusCode, body)
	}
	return v
}

var sessions = map[string]*http.Client{}

// browserConsent follows the authorization URL like a person: signs in (when
// password is given; else the earlier session is reused), reads the consent
// page, decides, and returns the code from the redirect ("" when none).
func browserConsent(t *testing.T, base, authURL, password, decision string) string {
	t.Helper()
	c, ok := sessions[base]
	if !ok || password != "" {
		c = browser(t)
		sessions[base] = c
	}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	form := formOf(t, res)
	if password != "" {
		form.Set("email", "flow@example.com")
		form.Set("password", password)
		res, err = c.PostForm(base+"/oauth/login", form)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("login: %v %v", res.StatusCode, err)
		}
		body, _ := io.ReadAll(res.Body)
		if !strings.Contains(string(body), `data-scope="profile:read"`) || !strings.Contains(string(body), `data-scope="email:read"`) {
			t.Fatalf("the consent page does not list the scopes:\n%s", body)
		}
		res.Body = io.NopCloser(strings.NewReader(string(body)))
		form = formOf(t, res)
	}
	form.Set("decision", decision)
	res, err = c.PostForm(base+"/oauth/consent", form)
	if err != nil || res.StatusCode != 302 {
		t.Fatalf("consent: %v %v", res.StatusCode, err)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), redirectURI) || loc.Query().Get("iss") != base {
		t.Fatalf("redirect to %s", loc)
	}
	if decision == "deny" && loc.Query().Get("error") != "access_denied" {
		t.Fatalf("deny: %s", loc)
	}
	return loc.Query().Get("code")
}
