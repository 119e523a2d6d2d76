package access_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
)

const issuer = "https://api.example"

// jwks is a users subgraph's key set as the edge fetches it, with an outage switch.
type jwks struct {
	mu      sync.Mutex
	keys    oauth.Keys
	down    bool
	fetches int
}

func (j *jwks) fetch(context.Context) ([]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fetches++
	if j.down {
		return nil, errors.New("users subgraph unreachable")
	}
	return j.keys.JWKS(), nil
}

func (j *jwks) set(f func(j *jwks)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(j)
}

func newKey(t *testing.T) *oauth.SigningKey {
	t.Helper()
	k, err := oauth.NewSigningKey(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mint(t *testing.T, keys oauth.Keys) string {
	t.Helper()
	tok, _, err := keys.Sign(issuer, "usr_1", "cli_1", []string{"profile:read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok
}

func TestTokensPickUpARotatedKeyAtItsFirstToken(t *testing.T) {
	old := newKey(t)
	src := &jwks{keys: oauth.Keys{old}}
	tokens := access.NewTokens(issuer, src.fetch)
	ctx := context.Background()
	if c, err := tokens.Authenticate(ctx, mint(t, oauth.Keys{old})); err != nil || c.Subject != "usr_1" {
		t.Fatalf("first token: %+v, %v", c, err)
	}
	rotated := oauth.Keys{newKey(t), old}
	src.set(func(j *jwks) { j.keys = rotated })
	if _, err := tokens.Authenticate(ctx, mint(t, rotated)); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	// A key nobody published stays refused.
	if _, err := tokens.Authenticate(ctx, mint(t, oauth.Keys{newKey(t)})); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("a token of an unpublished key: %v", err)
	}
}

func TestTokensKeepVerifyingWhileTheKeySourceIsDown(t *testing.T) {
	key := newKey(t)
	src := &jwks{keys: oauth.Keys{key}}
	tokens := access.NewTokens(issuer, src.fetch)
	clock := time.Now()
	tokens.Now = func() time.Time { return clock }
	ctx := context.Background()
	tok := mint(t, oauth.Keys{key})
	if _, err := tokens.Authenticate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// The cache expires during an outage: valid tokens still verify, and the
	// source is asked again every few seconds, not at every request.
	src.set(func(j *jwks) { j.down = true; j.fetches = 0 })
	clock = clock.Add(2 * time.Minute)
	for range 50 {
		if _, err := tokens.Authenticate(ctx, tok); err != nil {
			t.Fatalf("a valid token during the outage: %v", err)
		}
		clock = clock.Add(100 * time.Millisecond) // 5 s in all
	}
	src.set(func(j *jwks) {
		if j.fetches < 1 || j.fetches > 2 {
			t.Errorf("%d fetches in 5 s of outage, want 1 or 2", j.fetches)
		}
	})
}
