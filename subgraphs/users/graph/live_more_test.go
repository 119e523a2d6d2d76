package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/bus"
	busredis "github.com/vitolahq/vitola/internal/bus/redis"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/kv/kvtest"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
	"github.com/vitolahq/vitola/subgraphs/users/sqlstore"
)

const mySessionsQ = `subscription { mySmokeSessionStarted { id visibility note venue { id } } }`

// grant is a real OAuth grant of a user to a client: its access token's
// identity as the router forwards it (uid, scp, tid, fam), and its tokens.
type grant struct {
	id               trust.Identity
	access, refresh  string
	clientID, secret string
}

func newGrant(t *testing.T, st *sqlstore.Store, u *users.User, scopes ...string) grant {
	t.Helper()
	ctx := context.Background()
	c, secret, err := oauth.NewClient("App", []string{"https://app.example/cb"}, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv := &oauth.Server{Issuer: "http://vitola.test", Users: st, Clients: st, Grants: st}
	verifier := "a-pkce-verifier-that-is-long-enough-0123456789"
	code, err := srv.IssueCode(ctx, c.ID, u.ID, "https://app.example/cb", scopes, oauth.S256(verifier))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := srv.ExchangeCode(ctx, c.ID, secret, code, "https://app.example/cb", verifier)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := oauth.LiveKeys(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := accesstoken.Verifier{Issuer: "http://vitola.test", Keys: ks.PublicKeys()}.Verify(tr.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	return grant{id: trust.Identity{KeyID: "key_test", UserID: u.ID, Scopes: scopes, TokenID: cl.ID, FamilyID: cl.FamilyID},
		access: tr.AccessToken, refresh: tr.RefreshToken, clientID: c.ID, secret: secret}
}

// revoke calls the subgraph's revocation field as the shim's POST /oauth/revoke does.
func (r *replica) revoke(g grant, token string) {
	r.t.Helper()
	res := r.query("shim", trust.Identity{}, `query($c: String!, $s: String, $t: String!) { oauthRevoke(clientId: $c, clientSecret: $s, token: $t) }`,
		map[string]any{"c": g.clientID, "s": g.secret, "t": token})
	if len(res.Errors) > 0 || string(res.Data["oauthRevoke"]) != "true" {
		r.t.Fatalf("oauthRevoke: %s %+v", res.Data["oauthRevoke"], res.Errors)
	}
}

func TestMySmokeSessionStartedScope(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		r := newReplica(t, st, bus.NewLocal(0))
		ana, bo := newUser(t, st, "Ana", true), newUser(t, st, "Bo", false)
		for _, tt := range []struct {
			name string
			id   trust.Identity
			code string
		}{
			{"no token", trust.Identity{KeyID: "key_test"}, "UNAUTHENTICATED"},
			{"no scope", newGrant(t, st, ana, "profile:read").id, "INSUFFICIENT_SCOPE"},
		} {
			s := r.subscribe(tt.id, mySessionsQ, nil)
			if g := s.next(t); g.code() != tt.code {
				t.Errorf("%s: errors %+v, want %s", tt.name, g.Errors, tt.code)
			}
			s.ended(t)
		}

		// With sessions:read: the user's own sessions, public and private
		// (her profile is private: the feed would show neither), never another's.
		s := r.subscribe(newGrant(t, st, ana, "sessions:read").id, mySessionsQ, nil)
		r.waitSubscribed(2) // sessions and revocations
		r.start(bo, "public", ids.Derive(ids.Venue, "b"), "")
		priv := r.start(ana, "private", "", "")
		pub := r.start(ana, "public", ids.Derive(ids.Venue, "b"), "")
		for _, want := range []string{priv, pub} {
			var got struct{ ID, Visibility string }
			json.Unmarshal(s.next(t).Data["mySmokeSessionStarted"], &got)
			if got.ID != want {
				t.Fatalf("event %+v, want %s", got, want)
			}
		}
		s.none(t, 200*time.Millisecond)
	})
}

// Revoking the access token, or the grant (its refresh token), ends the
// stream opened with it with TOKEN_REVOKED; a stream of another grant goes on.
func TestMySmokeSessionStartedEndsOnRevocation(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := openStore(t, db)
		r := newReplica(t, st, bus.NewLocal(0))
		ana := newUser(t, st, "Ana", false)
		byAccess, byGrant, other := newGrant(t, st, ana, "sessions:read"), newGrant(t, st, ana, "sessions:read"), newGrant(t, st, ana, "sessions:read")
		s1, s2, s3 := r.subscribe(byAccess.id, mySessionsQ, nil), r.subscribe(byGrant.id, mySessionsQ, nil), r.subscribe(other.id, mySessionsQ, nil)
		r.waitSubscribed(6)

		r.revoke(byAccess, byAccess.access)
		expectRevoked(t, s1)
		r.revoke(byGrant, byGrant.refresh)
		expectRevoked(t, s2)

		id := r.start(ana, "private", "", "")
		var got struct{ ID string }
		json.Unmarshal(s3.next(t).Data["mySmokeSessionStarted"], &got)
		if got.ID != id {
			t.Fatalf("the other grant's stream got %+v, want %s", got, id)
		}
	})
}

func expectRevoked(t *testing.T, s *sseStream) {
	t.Helper()
	g := s.next(t)
	if g.code() != "TOKEN_REVOKED" {
		t.Fatalf("last event %s %+v, want a TOKEN_REVOKED error", g.Data, g.Errors)
	}
	s.ended(t)
}

// Two users-subgraph replicas on one store and one real Redis: a session
// written through one reaches the subscribers of the other, and a revocation
// on one ends the stream on the other.
func TestAcrossReplicasOnRedis(t *testing.T) {
	url := kvtest.RedisURL(t)
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		prefix := kvtest.Prefix("users-live")
		openBus := func() bus.Bus {
			b, err := busredis.Open(context.Background(), url, prefix, 0)
			if err != nil {
				t.Fatalf("Redis unreachable: %v", err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
		st1, st2 := openStore(t, db), openStore(t, db)
		one, two := newReplica(t, st1, openBus()), newReplica(t, st2, openBus())
		ana := newUser(t, st1, "Ana", false)
		venue := ids.Derive(ids.Venue, "b")
		feed := two.subscribe(trust.Identity{KeyID: "key_test"}, sessionStartedQ, map[string]any{"venue": venue})
		g := newGrant(t, st1, ana, "sessions:read")
		mine := two.subscribe(g.id, mySessionsQ, nil)
		two.waitSubscribed(3)

		id := one.start(ana, "public", venue, "")
		var ps struct{ ID string }
		json.Unmarshal(feed.next(t).Data["sessionStarted"], &ps)
		if want, _ := ids.Retype(id, ids.PublicSession); ps.ID != want {
			t.Fatalf("replica two's feed got %+v, want %s", ps, want)
		}
		var own struct{ ID string }
		json.Unmarshal(mine.next(t).Data["mySmokeSessionStarted"], &own)
		if own.ID != id {
			t.Fatalf("replica two's own stream got %+v, want %s", own, id)
		}
		one.revoke(g, g.access)
		expectRevoked(t, mine)
	})
}

// With Redis down, recording a session still succeeds, promptly: the session
// is saved, the live event is lost and counted.
func TestWriteSurvivesRedisOutage(t *testing.T) {
	srv := kvtest.StartRedisServer(t)
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		b, err := busredis.Open(context.Background(), srv.URL(), kvtest.Prefix("users-live"), 0)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		st := openStore(t, db)
		r := newReplica(t, st, b)
		ana := newUser(t, st, "Ana", false)
		srv.Kill()
		defer srv.Start()
		start := time.Now()
		id := r.start(ana, "public", ids.Derive(ids.Venue, "b"), "")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the write took %s with Redis down", d)
		}
		if s, err := st.SmokeSession(context.Background(), id); err != nil || s.UserID != ana.ID {
			t.Fatalf("session not saved: %+v, %v", s, err)
		}
		if stats := b.Stats(); stats.PublishFailed != 1 {
			t.Fatalf("bus stats %+v, want one lost event", stats)
		}
	})
}
