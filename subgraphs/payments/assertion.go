package payments

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A billing account assertion proves that the client's backend authorized
// this request for this account. It is a JWT (RFC 7519) that the backend signs
// with a private key whose public half it registered with the client
// (--assertion-key):
//
//	header: {"alg": "EdDSA" | "ES256" | "RS256" | "PS256", "kid": KID (optional), "typ": "JWT"}
//	claims: iss  the client ID (pcl_…)
//	        sub  the billing account reference the request names
//	        aud  the payments API's base URL ({payments_origin}/api/v1)
//	        iat  when it was made (Unix seconds)
//	        exp  at most MaxAssertionLifetime after iat
//	        jti  a unique ID (1 to 128 characters), usable once
//
// A missing, expired, replayed, foreign (another client's key, account or
// audience) or malformed assertion is refused with 403
// billing_account_assertion_required; the message says which rule failed.

// MaxAssertionLifetime bounds exp − iat.
const MaxAssertionLifetime = 5 * time.Minute

// assertionLeeway absorbs clock skew between the client's backend and us.
const assertionLeeway = 30 * time.Second

// AssertionKey is a registered public key.
type AssertionKey struct {
	// KID is the key's thumbprint: base64url of the SHA-256 of its DER form,
	// first 16 bytes. A JWT may name it in its kid header.
	KID string `json:"kid"`
	PEM string `json:"pem"`
	key crypto.PublicKey
}

// ParseAssertionKey reads a PEM public key (PKIX "PUBLIC KEY").
func ParseAssertionKey(p string) (AssertionKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil || block.Type != "PUBLIC KEY" {
		return AssertionKey{}, errors.New("want a PEM \"PUBLIC KEY\" (openssl pkey -pubout); a private key or certificate is not accepted")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return AssertionKey{}, errors.New("the PEM block is not a public key this server can read")
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return AssertionKey{}, errors.New("ECDSA keys must be on P-256 (ES256)")
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return AssertionKey{}, errors.New("RSA keys must have at least 2048 bits")
		}
	default:
		return AssertionKey{}, errors.New("use an Ed25519, ECDSA P-256 or RSA key")
	}
	sum := sha256.Sum256(block.Bytes)
	return AssertionKey{KID: base64.RawURLEncoding.EncodeToString(sum[:16]), PEM: string(pem.EncodeToMemory(block)), key: pub}, nil
}

// publicKey parses the stored PEM once.
func (k *AssertionKey) publicKey() (crypto.PublicKey, error) {
	if k.key != nil {
		return k.key, nil
	}
	parsed, err := ParseAssertionKey(k.PEM)
	if err != nil {
		return nil, err
	}
	k.key = parsed.key
	return k.key, nil
}

// AssertionClaims are an assertion's checked claims.
type AssertionClaims struct {
	JTI       string
	ExpiresAt time.Time
}

func assertionRefused(format string, args ...any) error {
	return Refuse(CodeAssertionRequired, "billing account assertion: "+format, args...)
}

// VerifyAssertion checks an assertion for the client, account reference and
// audience at now. It does not record the jti: the caller does, once.
func VerifyAssertion(token string, c *Client, reference, audience string, now time.Time) (AssertionClaims, error) {
	if token == "" {
		return AssertionClaims{}, assertionRefused("this client must send an assertion (a JWT signed with its registered key) for the account; see the docs")
	}
	if len(token) > 8192 {
		return AssertionClaims{}, assertionRefused("the assertion is longer than 8 KB")
	}
	var claims jwt.RegisteredClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{"EdDSA", "ES256", "RS256", "PS256"}),
		jwt.WithIssuer(c.ID), jwt.WithSubject(reference), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(assertionLeeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	_, err := parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		var candidates []jwt.VerificationKey
		for i := range c.AssertionKeys {
			k := &c.AssertionKeys[i]
			if kid != "" && k.KID != kid {
				continue
			}
			if pub, err := k.publicKey(); err == nil && keyFitsAlg(pub, t.Method.Alg()) {
				candidates = append(candidates, pub)
			}
		}
		if len(candidates) == 0 {
			return nil, errNoKey
		}
		return jwt.VerificationKeySet{Keys: candidates}, nil
	})
	switch {
	case errors.Is(err, errNoKey):
		return AssertionClaims{}, assertionRefused("no key registered with this client matches its kid and alg")
	case errors.Is(err, jwt.ErrTokenExpired):
		return AssertionClaims{}, assertionRefused("it has expired: make a new one for each request")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return AssertionClaims{}, assertionRefused("iss must be this client's ID")
	case errors.Is(err, jwt.ErrTokenInvalidSubject):
		return AssertionClaims{}, assertionRefused("sub must be the billing account reference of this request")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return AssertionClaims{}, assertionRefused("aud must be %s", audience)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return AssertionClaims{}, assertionRefused("it is issued in the future: check the clock of the server that signs it")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return AssertionClaims{}, assertionRefused("exp, iat, iss, sub, aud and jti are required")
	case err != nil:
		return AssertionClaims{}, assertionRefused("it is not a JWT signed with this client's registered key")
	}
	if claims.IssuedAt == nil || claims.ExpiresAt == nil {
		return AssertionClaims{}, assertionRefused("exp and iat are required")
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life > MaxAssertionLifetime || life <= 0 {
		return AssertionClaims{}, assertionRefused("exp must be after iat by at most %s", MaxAssertionLifetime)
	}
	if claims.ID == "" || len(claims.ID) > 128 || strings.ContainsFunc(claims.ID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return AssertionClaims{}, assertionRefused("jti must be 1 to 128 visible ASCII characters, new for every assertion")
	}
	return AssertionClaims{JTI: claims.ID, ExpiresAt: claims.ExpiresAt.Time.Add(assertionLeeway)}, nil
}

var errNoKey = errors.New("no matching key")

func keyFitsAlg(pub crypto.PublicKey, alg string) bool {
	switch pub.(type) {
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case *ecdsa.PublicKey:
		return alg == "ES256"
	case *rsa.PublicKey:
		return slices.Contains([]string{"RS256", "PS256"}, alg)
	}
	return false
}

// assertionReplayed is the refusal of a jti used before.
func assertionReplayed() error {
	return assertionRefused("its jti was used before: make a new assertion for each request")
}

// String hides the key material from logs (%v of a client).
func (k AssertionKey) String() string { return fmt.Sprintf("assertion key %s", k.KID) }
