package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AccessTokenTTL is how long an access token lives. A signing key retired by a
// rotation keeps verifying this long, so no live token stops working.
const AccessTokenTTL = 10 * time.Minute

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

// Keys is the live set of signing keys, newest first.
type Keys []*SigningKey

// Sign mints an access token for subject (a user ID) and client with scopes,
// signed with the newest key, outside any grant.
func (ks Keys) Sign(issuer, subject, clientID string, scopes []string, now time.Time) (string, Claims, error) {
	return ks.SignInFamily(issuer, "", subject, clientID, scopes, now)
}

// SignInFamily mints an access token as Sign does, under a refresh-token family.
func (ks Keys) SignInFamily(issuer, family, subject, clientID string, scopes []string, now time.Time) (string, Claims, error) {
	if len(ks) == 0 {
		return "", Claims{}, errors.New("no signing key")
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: issuer, Subject: subject, Audience: jwt.ClaimStrings{issuer},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AccessTokenTTL)),
			ID: base64.RawURLEncoding.EncodeToString(jti),
		},
		ClientID: clientID,
		Scope:    strings.Join(scopes, " "),
		FamilyID: family,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["typ"] = "at+jwt" // RFC 9068: not to be confused with an ID token
	tok.Header["kid"] = ks[0].KID
	s, err := tok.SignedString(ks[0].Private)
	return s, c, err
}

// ErrBadToken is any access token that does not verify.
var ErrBadToken = errors.New("invalid access token")

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
		if typ, _ := t.Header["typ"].(string); !strings.EqualFold(typ, "at+jwt") {
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

// PublicKeys returns the keys' public halves by kid.
func (ks Keys) PublicKeys() map[string]*ecdsa.PublicKey {
	out := make(map[string]*ecdsa.PublicKey, len(ks))
	for _, k := range ks {
		out[k.KID] = &k.Private.PublicKey
	}
	return out
}

// JWKS renders the public keys as a JSON Web Key Set (RFC 7517).
func (ks Keys) JWKS() []byte {
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Y   string `json:"y"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
	}
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range ks {
		pub := k.Private.PublicKey
		b, _ := pub.Bytes() // uncompressed point: 0x04 || X || Y
		set.Keys = append(set.Keys, jwk{Kty: "EC", Crv: "P-256", Kid: k.KID, Use: "sig", Alg: "ES256",
			X: base64.RawURLEncoding.EncodeToString(b[1:33]), Y: base64.RawURLEncoding.EncodeToString(b[33:65])})
	}
	out, _ := json.Marshal(set)
	return out
}

// LiveKeys returns the keys that sign or still verify, making the first key
// when there is none. Two replicas starting together may each make one; both
// are valid, and the newer signs.
func LiveKeys(ctx context.Context, st Store, now time.Time) (Keys, error) {
	ks, err := st.SigningKeys(ctx, now.Add(-AccessTokenTTL))
	if err != nil {
		return nil, err
	}
	if len(ks) > 0 && ks[0].RetiredAt == nil {
		return ks, nil
	}
	k, err := NewSigningKey(now)
	if err != nil {
		return nil, err
	}
	if err := st.AddSigningKey(ctx, k); err != nil {
		return nil, err
	}
	return st.SigningKeys(ctx, now.Add(-AccessTokenTTL))
}

// Rotate adds a new signing key and retires the others: they keep verifying
// for AccessTokenTTL, then drop out of the key set.
func Rotate(ctx context.Context, st Store, now time.Time) (*SigningKey, error) {
	k, err := NewSigningKey(now)
	if err != nil {
		return nil, err
	}
	if err := st.AddSigningKey(ctx, k); err != nil {
		return nil, err
	}
	return k, st.RetireSigningKeys(ctx, k.KID, now)
}
