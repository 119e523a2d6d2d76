package access

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/trust"
)

// ErrNoBearer means the request carried no bearer token.
var ErrNoBearer = errors.New("no bearer token")

// Tokens verifies OAuth access tokens at the edge (router and shim) with the
// public keys the users subgraph publishes. Keys are cached: refreshed every
// minute, and at once (at most every two seconds) when a token names a key the
// cache does not hold, so a rotation is picked up at its first token.
type Tokens struct {
	Issuer    string
	FetchJWKS func(ctx context.Context) ([]byte, error)
	Now       func() time.Time // the clock (tests set it)

	mu        sync.Mutex
	keys      map[string]*ecdsa.PublicKey
	refreshAt time.Time // when the cached keys are fetched again
	lastMiss  time.Time
}

// NewTokens returns a verifier for tokens issued by issuer.
func NewTokens(issuer string, fetch func(ctx context.Context) ([]byte, error)) *Tokens {
	return &Tokens{Issuer: issuer, FetchJWKS: fetch, Now: time.Now}
}

// InvalidTokenMessage is what the edge answers for a bad or expired access
// token, on every route.
const InvalidTokenMessage = "the access token is invalid or expired: get a new one"

// ForUser adds a verified access token's user, scopes, token ID and
// refresh-token family to a caller's identity: the users subgraph checks the
// last two against its revocation list.
func ForUser(id trust.Identity, c accesstoken.Claims) trust.Identity {
	id.UserID, id.Scopes, id.TokenID, id.FamilyID = c.Subject, c.Scopes(), c.ID, c.FamilyID
	return id
}

// BearerToken returns the token of an "Authorization: Bearer …" header.
func BearerToken(authorization string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// Authenticate verifies the access token of an Authorization header.
func (t *Tokens) Authenticate(ctx context.Context, authorization string) (accesstoken.Claims, error) {
	tok, ok := BearerToken(authorization)
	if !ok {
		return accesstoken.Claims{}, ErrNoBearer
	}
	keys, err := t.keySet(ctx, false)
	if err != nil {
		return accesstoken.Claims{}, err
	}
	c, err := accesstoken.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.Now}.Verify(tok)
	if errors.Is(err, accesstoken.ErrUnknownKey) {
		if keys, rerr := t.keySet(ctx, true); rerr == nil {
			c, err = accesstoken.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.Now}.Verify(tok)
		}
	}
	return c, err
}

func (t *Tokens) keySet(ctx context.Context, miss bool) (map[string]*ecdsa.PublicKey, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.Now()
	// The lock is held while fetching: concurrent requests wait for one fetch
	// rather than each making their own.
	stale := t.keys == nil || !now.Before(t.refreshAt)
	if miss && now.Sub(t.lastMiss) > 2*time.Second {
		t.lastMiss, stale = now, true
	}
	if !stale {
		return t.keys, nil
	}
	keys, err := t.FetchJWKS(ctx)
	var parsed map[string]*ecdsa.PublicKey
	if err == nil {
		parsed, err = accesstoken.ParseJWKS(keys)
	}
	if err != nil {
		if t.keys != nil {
			// Keep verifying with the keys we have, and do not ask again on
			// every request while the users subgraph is unreachable.
			t.refreshAt = now.Add(5 * time.Second)
			return t.keys, nil
		}
		return nil, fmt.Errorf("fetch the token keys: %w", err)
	}
	t.keys, t.refreshAt = parsed, now.Add(time.Minute)
	return parsed, nil
}
