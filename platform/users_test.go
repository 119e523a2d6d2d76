package platform_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	usersdemo "github.com/vitolahq/vitola/subgraphs/users/demo"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	userssql "github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// mint signs an access token the way `vitola oauth token` does, from the same
// store the platform uses.
func (f *fixture) mint(t *testing.T, userID string, scopes ...string) string {
	t.Helper()
	ctx := context.Background()
	st, err := userssql.Open(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := oauth.LiveKeys(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := keys.Sign(publicURL, userID, "cli_test", scopes, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fixture) me(t *testing.T, token string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/me", nil)
	req.Header.Set("x-service-key", f.key)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body, res.Header
}

func (f *fixture) gqlAs(t *testing.T, token, query string, vars map[string]any) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", f.srv.URL+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-service-key", f.key)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := gqlResponse{Status: res.StatusCode, Raw: string(raw)}
	json.Unmarshal(raw, &out)
	return out
}

func (f *fixture) testConnectedUser(t *testing.T) {
	ana := usersdemo.UserID("ana@vitola.example")
	ben := usersdemo.UserID("ben@vitola.example")
	hidden := usersdemo.UserID("hidden@vitola.example")

	t.Run("GET /v1/me", func(t *testing.T) {
		status, body, _ := f.me(t, f.mint(t, ana, "profile:read"))
		if status != 200 || at(body, "data", "id") != ana || at(body, "data", "displayName") != "Ana Ruiz" || at(body, "data", "email") != nil {
			t.Fatalf("profile:read: %d %v", status, body)
		}
		status, body, _ = f.me(t, f.mint(t, ana, "profile:read", "email:read"))
		if status != 200 || at(body, "data", "email") != "ana@vitola.example" {
			t.Fatalf("with email:read: %d %v", status, body)
		}
		status, body, hdr := f.me(t, f.mint(t, ana, "email:read"))
		if status != 403 || body["error"] != "insufficient_scope" || !strings.Contains(body["message"].(string), "profile:read") || !strings.Contains(hdr.Get("WWW-Authenticate"), "insufficient_scope") {
			t.Fatalf("without profile:read: %d %v", status, body)
		}
		good := f.mint(t, ana, "profile:read")
		for name, tok := range map[string]string{"missing": "", "garbage": "abc.def.ghi", "tampered": good[:len(good)-4] + "AAAA"} {
			if status, body, _ := f.me(t, tok); status != 401 || body["error"] != "invalid_token" {
				t.Errorf("%s token: %d %v", name, status, body)
			}
		}
	})

	t.Run("AuthorizationMatrix", func(t *testing.T) { f.testAuthorizationMatrix(t, ana, ben) })

	t.Run("JWKS", func(t *testing.T) {
		res, err := http.Get(f.srv.URL + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var set struct {
			Keys []struct{ Kid, Kty, Crv, Alg string }
		}
		json.NewDecoder(res.Body).Decode(&set)
		if res.StatusCode != 200 || len(set.Keys) == 0 || set.Keys[0].Alg != "ES256" || set.Keys[0].Kty != "EC" {
			t.Fatalf("jwks: %d %+v", res.StatusCode, set)
		}
	})

	t.Run("GraphQL", func(t *testing.T) {
		const q = `query($other: ID!, $me: ID!) { me { id email } other: user(id: $other) { id email bio } self: user(id: $me) { id firstName email } brands(first: 1) { edges { cursor } } }`
		vars := map[string]any{"other": ben, "me": hidden}
		// Without a token: me is null with a code, the rest resolves.
		r := f.gqlAs(t, "", q, vars)
		if r.Status != 200 || r.Data["me"] != nil || code(r) != "UNAUTHENTICATED" || at(r.Data, "brands", "edges", 0, "cursor") == nil {
			t.Fatalf("anonymous: %d %v %v", r.Status, r.Data, r.Errors)
		}
		// The private user with its own token sees its own profile in full,
		// but never another user's email.
		r = f.gqlAs(t, f.mint(t, hidden, "profile:read", "email:read"), q, vars)
		if len(r.Errors) > 0 || at(r.Data, "me", "email") != "hidden@vitola.example" || at(r.Data, "self", "firstName") != "Hana" ||
			at(r.Data, "other", "email") != nil || at(r.Data, "other", "id") != ben {
			t.Fatalf("own token: %v %v", r.Data, r.Errors)
		}
		// Another user's token sees the private profile's public view only.
		r = f.gqlAs(t, f.mint(t, ana, "profile:read", "email:read"), q, vars)
		if at(r.Data, "self", "firstName") != nil || at(r.Data, "self", "email") != nil {
			t.Fatalf("private profile leaked to another user: %v", r.Data)
		}
		// Without profile:read, me is null with INSUFFICIENT_SCOPE.
		r = f.gqlAs(t, f.mint(t, hidden, "email:read"), q, vars)
		if r.Data["me"] != nil || code(r) != "INSUFFICIENT_SCOPE" {
			t.Fatalf("no profile:read: %v %v", r.Data, r.Errors)
		}
		if r := f.gqlAs(t, "not-a-token", q, vars); r.Status != 401 {
			t.Fatalf("invalid token: %d", r.Status)
		}
		if r := f.gqlAs(t, "", `{ oauthJWKS }`, nil); code(r) != "GRAPHQL_VALIDATION_FAILED" {
			t.Fatalf("the internal JWKS field is public: %v", r.Errors)
		}
	})
}

// testAuthorizationMatrix runs every connected-user field with tokens of every
// scope: a field answers only with its scope, only its own user's data, and
// never another user's, node(id:) included.
func (f *fixture) testAuthorizationMatrix(t *testing.T, owner, other string) {
	ownCollection := ids.Derive(ids.Collection, owner+"\x00Wishlist")   // private
	otherCollection := ids.Derive(ids.Collection, other+"\x00Wishlist") // private
	fields := []struct{ field, scope, query string }{
		{"myCollections", "collections:read", `myCollections(first: 5) { edges { node { id name private items { cigar { id name } } } } }`},
		{"myHumidors", "humidor:read", `myHumidors(first: 5) { edges { node { id items { quantity cigar { name } } } } }`},
		{"mySmokeSessions", "sessions:read", `mySmokeSessions(first: 5) { edges { node { id visibility cigar { name brand { name } } venue { name } } } }`},
		{"myCheckIns", "checkins:read", `myCheckIns(first: 5) { edges { node { id venue { name city } } } }`},
	}
	var q strings.Builder
	q.WriteString(`query($own: ID!, $other: ID!, $otherUser: ID!) { `)
	for _, fl := range fields {
		q.WriteString(fl.query + " ")
	}
	q.WriteString(`own: node(id: $own) { id } foreign: node(id: $other) { id } otherUser: user(id: $otherUser) { email } }`)
	vars := map[string]any{"own": ownCollection, "other": otherCollection, "otherUser": other}

	all := append([]string{"profile:read", "email:read"}, "collections:read", "humidor:read", "sessions:read", "checkins:read")
	for _, scopes := range [][]string{nil, {"profile:read"}, {"collections:read"}, {"humidor:read"}, {"sessions:read"}, {"checkins:read"}, all} {
		t.Run(strings.Join(append([]string{"scopes"}, scopes...), " "), func(t *testing.T) {
			token := ""
			if scopes != nil {
				token = f.mint(t, owner, scopes...)
			}
			r := f.gqlAs(t, token, q.String(), vars)
			if r.Status != 200 {
				t.Fatalf("status %d: %v", r.Status, r.Errors)
			}
			for _, fl := range fields {
				has := slices.Contains(scopes, fl.scope)
				got := r.Data[fl.field]
				if has != (got != nil) {
					t.Fatalf("%s with %v: %v", fl.field, scopes, got)
				}
				if has && len(at(got, "edges").([]any)) == 0 {
					t.Fatalf("%s: no data for its owner", fl.field)
				}
			}
			if r.Data["foreign"] != nil || at(r.Data, "otherUser", "email") != nil {
				t.Fatalf("another user's data leaked: %v %v", r.Data["foreign"], r.Data["otherUser"])
			}
			if has := slices.Contains(scopes, "collections:read"); has != (r.Data["own"] != nil) {
				t.Fatalf("own collection by node with %v: %v", scopes, r.Data["own"])
			}
			if has := slices.Contains(scopes, "collections:read"); has {
				// Only the owner's collections, private ones included.
				for _, e := range at(r.Data, "myCollections", "edges").([]any) {
					id := at(e, "node", "id").(string)
					if id != ownCollection && id != ids.Derive(ids.Collection, owner+"\x00Favourites") {
						t.Fatalf("myCollections returned %s", id)
					}
				}
			}
			if slices.Contains(scopes, "sessions:read") {
				// The session's cigar and venue come from their own subgraphs.
				s := at(r.Data, "mySmokeSessions", "edges", 0, "node")
				if at(s, "cigar", "brand", "name") == nil || at(s, "venue", "name") == nil {
					t.Fatalf("session not completed through federation: %v", s)
				}
			}
		})
	}
}
