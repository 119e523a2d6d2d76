package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

const issuer = "https://vitola.example"

func TestClients(t *testing.T) {
	now := time.Now()
	c, secret, err := oauth.NewClient("Humidor App", []string{"https://app.example/cb", "http://localhost:8765/cb"}, false, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "cli_") || !strings.HasPrefix(secret, "cs_") || strings.Contains(c.SecretHash, secret) {
		t.Fatalf("client %+v secret %q", c, secret)
	}
	if !c.CheckSecret(secret) || c.CheckSecret(secret+"x") || c.CheckSecret("") {
		t.Fatal("secret check")
	}
	if !c.RedirectAllowed("https://app.example/cb") || c.RedirectAllowed("https://app.example/cb/") || c.RedirectAllowed("https://app.example/cb?x=1") {
		t.Fatal("redirect URIs must match exactly")
	}
	pub, secret2, _ := oauth.NewClient("CLI", []string{"http://127.0.0.1:9000/cb"}, true, now)
	if secret2 != "" || pub.CheckSecret("") {
		t.Fatal("public clients have no secret")
	}
	for _, bad := range [][]string{nil, {"http://app.example/cb"}, {"https://app.example/cb#frag"}, {"/relative"}, {"javascript:alert(1)"}} {
		if _, _, err := oauth.NewClient("x", bad, false, now); !errors.Is(err, oauth.ErrBadRedirectURI) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := oauth.ParseScope("profile:read email:read profile:read"); err != nil {
		t.Fatal(err)
	}
	if _, err := oauth.ParseScope("profile:read admin"); !errors.Is(err, oauth.ErrUnknownScope) {
		t.Fatalf("unknown scope: %v", err)
	}
}

func TestKeysAndTokens(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		now := time.Now()

		// Replicas starting together: every one gets a working key set.
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ks, err := oauth.LiveKeys(ctx, st, now); err != nil || len(ks) == 0 {
					t.Errorf("LiveKeys: %v %v", ks, err)
				}
			}()
		}
		wg.Wait()
		ks, err := oauth.LiveKeys(ctx, st, now)
		if err != nil {
			t.Fatal(err)
		}
		tok, claims, err := ks.Sign(issuer, "usr_x", "cli_y", []string{"profile:read", "email:read"}, now)
		if err != nil {
			t.Fatal(err)
		}
		v := accesstoken.Verifier{Issuer: issuer, Keys: ks.PublicKeys(), Now: func() time.Time { return now }}
		got, err := v.Verify(tok)
		if err != nil || got.Subject != "usr_x" || got.ClientID != "cli_y" || got.Scope != "profile:read email:read" || got.ID != claims.ID {
			t.Fatalf("Verify = %+v, %v", got, err)
		}
		hdr := strings.Split(tok, ".")[0]
		raw, _ := base64.RawURLEncoding.DecodeString(hdr)
		if !strings.Contains(string(raw), `"typ":"at+jwt"`) {
			t.Fatalf("header %s", raw)
		}

		// The JWKS carries the same public keys.
		var set struct {
			Keys []struct{ Kid, Kty, Crv, X, Y, Alg string }
		}
		json.Unmarshal(ks.JWKS(), &set)
		fromJWKS := map[string]*ecdsa.PublicKey{}
		for _, k := range set.Keys {
			x, _ := base64.RawURLEncoding.DecodeString(k.X)
			y, _ := base64.RawURLEncoding.DecodeString(k.Y)
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				t.Fatalf("JWKS key %s: %v", k.Kid, err)
			}
			fromJWKS[k.Kid] = pub
		}
		if _, err := (accesstoken.Verifier{Issuer: issuer, Keys: fromJWKS, Now: v.Now}).Verify(tok); err != nil {
			t.Fatalf("token does not verify with the JWKS: %v", err)
		}

		// Rotation: the old key keeps verifying its tokens until they expire.
		nk, err := oauth.Rotate(ctx, st, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		after, _ := oauth.LiveKeys(ctx, st, now.Add(time.Minute))
		if after[0].KID != nk.KID {
			t.Fatalf("the new key does not sign: %s", after[0].KID)
		}
		if _, err := (accesstoken.Verifier{Issuer: issuer, Keys: after.PublicKeys(), Now: func() time.Time { return now.Add(time.Minute) }}).Verify(tok); err != nil {
			t.Fatalf("old token after rotation: %v", err)
		}
		later, _ := oauth.LiveKeys(ctx, st, now.Add(time.Minute+oauth.AccessTokenTTL+time.Second))
		if _, ok := later.PublicKeys()[ks[0].KID]; ok {
			t.Fatal("a retired key outlived the tokens it signed")
		}

		// Tokens that must not verify.
		expired := accesstoken.Verifier{Issuer: issuer, Keys: ks.PublicKeys(), Now: func() time.Time { return now.Add(oauth.AccessTokenTTL + time.Minute) }}
		idTok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
		idTok.Header["kid"] = ks[0].KID // typ JWT: an ID token is no access token
		idTokStr, _ := idTok.SignedString(ks[0].Private)
		for name, check := range map[string]func() error{
			"expired": func() error { _, err := expired.Verify(tok); return err },
			"other issuer": func() error {
				_, err := (accesstoken.Verifier{Issuer: "https://evil.example", Keys: ks.PublicKeys()}).Verify(tok)
				return err
			},
			"unknown key": func() error { _, err := (accesstoken.Verifier{Issuer: issuer, Keys: nil}).Verify(tok); return err },
			"tampered":    func() error { _, err := v.Verify(tok[:len(tok)-4] + "AAAA"); return err },
			"not at+jwt":  func() error { _, err := v.Verify(idTokStr); return err },
		} {
			if err := check(); !errors.Is(err, accesstoken.ErrBadToken) {
				t.Errorf("%s: %v", name, err)
			}
		}

		c, _, _ := oauth.NewClient("App", []string{"https://app.example/cb"}, false, now)
		if err := st.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
		got2, err := st.Client(ctx, c.ID)
		if err != nil || got2.Name != "App" || !got2.RedirectAllowed("https://app.example/cb") || got2.SecretHash != c.SecretHash {
			t.Fatalf("client round trip: %+v %v", got2, err)
		}
		if _, err := st.Client(ctx, "cli_0000000000000000"); !errors.Is(err, oauth.ErrNotFound) {
			t.Fatalf("unknown client: %v", err)
		}
	})
}

// An unknown scope is named in the error cut short: the authorization
// server repeats it to the client that asked.
func TestParseScopeCutsAnUnknownScope(t *testing.T) {
	_, err := oauth.ParseScope("profile:read " + strings.Repeat("x", 10_000))
	if !errors.Is(err, oauth.ErrUnknownScope) || len(err.Error()) > 200 || !strings.Contains(err.Error(), "x…") {
		t.Errorf("error: %.300q", err)
	}
}
