package access

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

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
	now       func() time.Time

	mu       sync.Mutex
	keys     map[string]*ecdsa.PublicKey
	fetched  time.Time
	lastMiss time.Time
}

// NewTokens returns a verifier for tokens issued by issuer.
func NewTokens(issuer string, fetch func(ctx context.Context) ([]byte, error)) *Tokens {
	return &Tokens{Issuer: issuer, FetchJWKS: fetch, now: time.Now}
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
	c, err := oauth.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.now}.Verify(tok)
	if err != nil && strings.Contains(err.Error(), "unknown key") {
		if keys, rerr := t.keySet(ctx, true); rerr == nil {
			c, err = oauth.Verifier{Issuer: t.Issuer, Keys: keys, Now: t.now}.Verify(tok)
		}
	}
	return c, err
}

func (t *Tokens) keySet(ctx context.Context, miss bool) (map[string]*ecdsa.PublicKey, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	stale := t.keys == nil || now.Sub(t.fetched) > time.Minute
	if miss && now.Sub(t.lastMiss) > 2*time.Second {
		t.lastMiss, stale = now, true
	}
	if !stale {
		return t.keys, nil
	}
	raw, err := t.FetchJWKS(ctx)
	if err != nil {
		if t.keys != nil {
			return t.keys, nil // keep verifying with the keys we have
		}
		return nil, fmt.Errorf("fetch the token keys: %w", err)
	}
	keys, err := ParseJWKS(raw)
	if err != nil {
		return nil, err
	}
	t.keys, t.fetched = keys, now
	return keys, nil
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
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		if !pub.Curve.IsOnCurve(pub.X, pub.Y) {
			return nil, fmt.Errorf("JWKS key %s is not on P-256", k.Kid)
		}
		out[k.Kid] = pub
	}
	return out, nil
}
