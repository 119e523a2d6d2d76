package oauth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

// clock is a settable time for the revocation cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// grantEnv is an authorization server over a real store, with one client.
type grantEnv struct {
	srv      *oauth.Server
	st       *sqlstore.Store
	clk      *clock
	clientID string
	secret   string
	verifier string
}

func newGrantEnv(t testing.TB, db *sqldb.DB) *grantEnv {
	st := sqlstore.New(db)
	clk := &clock{t: time.Now()}
	c, secret, _ := oauth.NewClient("App", []string{"https://app.example/cb"}, false, clk.Now())
	if err := st.CreateClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return &grantEnv{srv: &oauth.Server{Issuer: issuer, Clients: st, Grants: st, Now: clk.Now}, st: st, clk: clk,
		clientID: c.ID, secret: secret, verifier: "a-pkce-verifier-that-is-long-enough-0123456789"}
}

// code issues an authorization code for usr_x.
func (e *grantEnv) code(t testing.TB) string {
	code, err := e.srv.IssueCode(context.Background(), e.clientID, "usr_x", "https://app.example/cb", []string{"profile:read"}, oauth.S256(e.verifier))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func (e *grantEnv) exchange(code string) (*oauth.TokenResponse, error) {
	return e.srv.ExchangeCode(context.Background(), e.clientID, e.secret, code, "https://app.example/cb", e.verifier)
}

func (e *grantEnv) claims(t testing.TB, access string) accesstoken.Claims {
	ks, err := oauth.LiveKeys(context.Background(), e.st, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := accesstoken.Verifier{Issuer: issuer, Keys: ks.PublicKeys(), Now: e.clk.Now}.Verify(access)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// revoked asks as the users subgraph does for every request with a token.
func (e *grantEnv) revoked(t testing.TB, access string) bool {
	c := e.claims(t, access)
	r, err := e.srv.AccessTokenRevoked(context.Background(), c.ID, c.FamilyID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFamilyRevocation(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		e := newGrantEnv(t, db)
		refresh := func(rt string) (*oauth.TokenResponse, error) {
			return e.srv.Refresh(ctx, e.clientID, e.secret, rt)
		}
		// A revocation is seen once the cached verdict has expired.
		later := func() { e.clk.Add(oauth.RevocationCacheTTL + time.Millisecond) }

		// Access tokens name their family.
		code := e.code(t)
		tok, err := e.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		if c := e.claims(t, tok.AccessToken); c.FamilyID == "" {
			t.Fatalf("the access token names no family: %+v", c)
		}
		bystander, err := e.exchange(e.code(t))
		if err != nil {
			t.Fatal(err)
		}
		if e.revoked(t, tok.AccessToken) {
			t.Fatal("a live token is revoked")
		}

		// A replayed code is refused and revokes what it issued (RFC 6749 §4.1.2),
		// even once expired.
		e.clk.Add(oauth.CodeTTL + time.Second)
		if _, err := e.exchange(code); !errors.Is(err, oauth.ErrInvalidGrant) {
			t.Fatalf("replay: %v", err)
		}
		later()
		if !e.revoked(t, tok.AccessToken) {
			t.Fatal("the access token of a replayed code is not revoked")
		}
		if _, err := refresh(tok.RefreshToken); !errors.Is(err, oauth.ErrInvalidGrant) {
			t.Fatalf("the refresh token of a replayed code: %v", err)
		}
		if e.revoked(t, bystander.AccessToken) {
			t.Fatal("a replay revoked another family")
		}

		// Revoking a refresh token (RFC 7009) revokes its access tokens.
		tok, _ = e.exchange(e.code(t))
		rotated, err := refresh(tok.RefreshToken)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.srv.Revoke(ctx, e.clientID, e.secret, rotated.RefreshToken); err != nil {
			t.Fatal(err)
		}
		later()
		if !e.revoked(t, tok.AccessToken) || !e.revoked(t, rotated.AccessToken) {
			t.Fatal("revoking the refresh token left its access tokens live")
		}

		// Reuse detection revokes the family's access tokens too.
		tok, _ = e.exchange(e.code(t))
		rotated, _ = refresh(tok.RefreshToken)
		if _, err := refresh(tok.RefreshToken); !errors.Is(err, oauth.ErrInvalidGrant) {
			t.Fatalf("reuse: %v", err)
		}
		later()
		if !e.revoked(t, rotated.AccessToken) {
			t.Fatal("reuse detection left the family's access tokens live")
		}

		// A refresh token saved after its family was revoked (an exchange racing
		// the replay of its code) is refused all the same.
		c := e.claims(t, rotated.AccessToken)
		late, hash := oauth.NewSecret()
		if err := e.st.SaveRefreshToken(ctx, &oauth.RefreshToken{Hash: hash, FamilyID: c.FamilyID, ClientID: e.clientID, UserID: "usr_x",
			Scope: "profile:read", ExpiresAt: e.clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := refresh(late); !errors.Is(err, oauth.ErrInvalidGrant) {
			t.Fatalf("a refresh token of a revoked family: %v", err)
		}
		if e.revoked(t, bystander.AccessToken) {
			t.Fatal("another family was revoked along")
		}
	})
}

// BenchmarkAccessTokenCheck measures what a request with an access token costs
// the platform to accept: the edge's signature check alone (the baseline), then
// with the users subgraph's revocation check, served from its cache (every
// request but one per token and replica each RevocationCacheTTL) and from the
// store (that one; SQLite, and PostgreSQL when VITOLA_TEST_DATABASE_URL is set).
//
//	go test ./subgraphs/users/oauth -run '^$' -bench AccessTokenCheck
func BenchmarkAccessTokenCheck(b *testing.B) {
	backends := sqldbtest.Backends(b)
	for _, name := range []string{sqldb.SQLite, sqldb.Postgres} {
		cfg, ok := backends[name]
		if !ok {
			continue
		}
		e := newGrantEnv(b, sqldbtest.MustOpen(b, cfg, sqlstore.StoreName, sqlstore.Migrations))
		tok, err := e.exchange(e.code(b))
		if err != nil {
			b.Fatal(err)
		}
		ks, _ := oauth.LiveKeys(context.Background(), e.st, e.clk.Now())
		start := e.clk.Now() // the token stays valid however far the cache's clock goes
		v := accesstoken.Verifier{Issuer: issuer, Keys: ks.PublicKeys(), Now: func() time.Time { return start }}
		check := func(b *testing.B, revocation bool) {
			c, err := v.Verify(tok.AccessToken)
			if err != nil {
				b.Fatal(err)
			}
			if revocation {
				if r, err := e.srv.AccessTokenRevoked(context.Background(), c.ID, c.FamilyID); err != nil || r {
					b.Fatal(r, err)
				}
			}
		}
		if name == sqldb.SQLite { // the first two do not touch the store
			b.Run("signature only (baseline)", func(b *testing.B) {
				for b.Loop() {
					check(b, false)
				}
			})
			b.Run("with revocation check, cached", func(b *testing.B) {
				for b.Loop() {
					check(b, true)
				}
			})
		}
		b.Run("with revocation check, from the store/"+name, func(b *testing.B) {
			for b.Loop() {
				e.clk.Add(oauth.RevocationCacheTTL) // every verdict has expired
				check(b, true)
			}
		})
	}
}
