// Package accesstoken is the contract between the users subgraph, which
// issues OAuth access tokens, and the edge (router and shim), which verifies
// them: the claims of an RFC 9068 token, how it is signed and verified
// (ES256), the JSON Web Key Set that publishes the keys, the scopes a token
// can carry, and the authorization server's metadata (RFC 8414). It imports
// neither side, so that neither imports the other.
package accesstoken

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Scopes a token can carry. sessions:write records smoke sessions (POST
// /v1/me/sessions); other write-oriented scopes may be granted but enable
// nothing yet (the graph has no mutations).
var Scopes = []string{"profile:read", "email:read", "collections:read", "humidor:read", "sessions:read", "sessions:write", "checkins:read"}

// Claims are an RFC 9068 access token's claims.
type Claims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	// Scope is space-separated, as RFC 9068 says.
	Scope string `json:"scope"`
	// FamilyID is the refresh-token family (the grant one authorization code
	// started) the token was issued under: revoking the family revokes the
	// token. Empty for tokens minted outside a grant (`vitola oauth token`).
	FamilyID string `json:"sid,omitempty"`
}

// Scopes returns the token's scopes.
func (c Claims) Scopes() []string { return strings.Fields(c.Scope) }

// Errors.
var (
	// ErrBadToken is any access token that does not verify.
	ErrBadToken = errors.New("invalid access token")
	// ErrUnknownKey is a token signed with a key the verifier does not hold: a
	// verifier with cached keys fetches them again (they may have rotated).
	ErrUnknownKey = errors.New("unknown signing key")
)

// typ is the JOSE header that tells an access token from an ID token (RFC 9068).
const typ = "at+jwt"

// Sign signs claims with the private key named kid.
func Sign(c Claims, kid string, key *ecdsa.PrivateKey) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["typ"] = typ
	tok.Header["kid"] = kid
	return tok.SignedString(key)
}

// Verifier checks access tokens against a set of public keys.
type Verifier struct {
	Issuer string
	Keys   map[string]*ecdsa.PublicKey
	Now    func() time.Time
}

// Verify returns a valid token's claims.
func (v Verifier) Verify(token string) (Claims, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(v.Issuer), jwt.WithAudience(v.Issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(now), jwt.WithLeeway(5*time.Second))
	var c Claims
	t, err := p.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if h, _ := t.Header["typ"].(string); !strings.EqualFold(h, typ) {
			return nil, errors.New("not an access token (typ)")
		}
		kid, _ := t.Header["kid"].(string)
		k, ok := v.Keys[kid]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
		}
		return k, nil
	})
	if err != nil || !t.Valid || c.Subject == "" || c.ID == "" {
		return Claims{}, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	return c, nil
}

// PublicKey is a verifying key and its ID (the tokens' kid).
type PublicKey struct {
	ID  string
	Key *ecdsa.PublicKey
}

type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// EncodeJWKS renders P-256 public keys as a JSON Web Key Set (RFC 7517), in
// the order given.
func EncodeJWKS(keys []PublicKey) []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range keys {
		b, _ := k.Key.Bytes() // uncompressed point: 0x04 || X || Y
		set.Keys = append(set.Keys, jwk{Kty: "EC", Crv: "P-256", Kid: k.ID, Use: "sig", Alg: "ES256",
			X: base64.RawURLEncoding.EncodeToString(b[1:33]), Y: base64.RawURLEncoding.EncodeToString(b[33:65])})
	}
	out, _ := json.Marshal(set)
	return out
}

// ParseJWKS reads the P-256 keys of a JSON Web Key Set, by kid.
func ParseJWKS(raw []byte) (map[string]*ecdsa.PublicKey, error) {
	var set struct{ Keys []jwk }
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

// Metadata is the authorization server's RFC 8414 document for issuer: the
// shim serves it, at the endpoints it routes to the users subgraph.
func Metadata(issuer string) map[string]any {
	return map[string]any{
		"issuer":                                     issuer,
		"authorization_endpoint":                     issuer + "/oauth/authorize",
		"token_endpoint":                             issuer + "/oauth/token",
		"revocation_endpoint":                        issuer + "/oauth/revoke",
		"jwks_uri":                                   issuer + "/.well-known/jwks.json",
		"scopes_supported":                           Scopes,
		"response_types_supported":                   []string{"code"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      []string{"client_secret_basic", "client_secret_post", "none"},
		"revocation_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
	}
}
