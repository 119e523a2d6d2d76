package access

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/trust"

	"github.com/vitolahq/vitola/subgraphs/users/oauth"
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
func ForUser(id trust.Identity, c oauth.Claims) trust.Identity {
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
func (t *Tokens) Authenticate(ctx context.Context, authorization string) (oauth.Claims, error) {
	tok, ok := BearerToken(authorization)
	if !ok {
		return oauth.Claims{}, ErrNoBearer
	}
	keys, err := t.keySet(ctx, false)
	if err != nil {
		return oauth.Claims{}, err
	}
	c, err := oauth.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.Now}.Verify(tok)
	if errors.Is(err, oauth.ErrUnknownKey) {
		if keys, rerr := t.keySet(ctx, true); rerr == nil {
			c, err = oauth.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.Now}.Verify(tok)
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
		parsed, err = ParseJWKS(keys)
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

// ParseJWKS reads the P-256 keys of a JSON Web Key Set.
func ParseJWKS(raw []byte) (map[string]*ecdsa.PublicKey, error) {
	var set struct {
		Keys []struct{ Kty, Crv, Kid, X, Y string }
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	out := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" {
			continue
		}
		x, err1 := base64.RawURLEncoding.DecodeString(k.X)
		y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("JWKS key %s: bad coordinates", k.Kid)
		}
		if len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("JWKS key %s: coordinates are not 32 bytes", k.Kid)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("JWKS key %s is not on P-256", k.Kid)
		}
		out[k.Kid] = pub
	}
	return out, nil
}
