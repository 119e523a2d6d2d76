package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vitolahq/vitola/internal/accesstoken"
)

// AccessTokenTTL is how long an access token lives. A signing key retired by a
// rotation keeps verifying this long, so no live token stops working.
const AccessTokenTTL = 10 * time.Minute

// Keys is the live set of signing keys, newest first.
type Keys []*SigningKey

// Sign mints an access token for subject (a user ID) and client with scopes,
// signed with the newest key, outside any grant.
func (ks Keys) Sign(issuer, subject, clientID string, scopes []string, now time.Time) (string, accesstoken.Claims, error) {
	return ks.SignInFamily(issuer, "", subject, clientID, scopes, now)
}

// SignInFamily mints an access token as Sign does, under a refresh-token family.
func (ks Keys) SignInFamily(issuer, family, subject, clientID string, scopes []string, now time.Time) (string, accesstoken.Claims, error) {
	if len(ks) == 0 {
		return "", accesstoken.Claims{}, errors.New("no signing key")
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	c := accesstoken.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: issuer, Subject: subject, Audience: jwt.ClaimStrings{issuer},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AccessTokenTTL)),
			ID: base64.RawURLEncoding.EncodeToString(jti),
		},
		ClientID: clientID,
		Scope:    strings.Join(scopes, " "),
		FamilyID: family,
	}
	s, err := accesstoken.Sign(c, ks[0].KID, ks[0].Private)
	return s, c, err
}

// PublicKeys returns the keys' public halves by kid.
func (ks Keys) PublicKeys() map[string]*ecdsa.PublicKey {
	out := make(map[string]*ecdsa.PublicKey, len(ks))
	for _, k := range ks {
		out[k.KID] = &k.Private.PublicKey
	}
	return out
}

// JWKS renders the public keys as a JSON Web Key Set (RFC 7517), newest first.
func (ks Keys) JWKS() []byte {
	pub := make([]accesstoken.PublicKey, len(ks))
	for i, k := range ks {
		pub[i] = accesstoken.PublicKey{ID: k.KID, Key: &k.Private.PublicKey}
	}
	return accesstoken.EncodeJWKS(pub)
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
