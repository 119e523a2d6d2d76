package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"time"

	"github.com/vitolahq/vitola/internal/secret"
)

// Lifetimes of the grants.
const (
	CodeTTL         = time.Minute
	RefreshTokenTTL = 30 * 24 * time.Hour
)

// OAuth error codes (RFC 6749 §5.2), as the token endpoint reports them.
var (
	ErrInvalidGrant  = errors.New("invalid_grant")
	ErrInvalidClient = errors.New("invalid_client")
)

// Code is an authorization code as stored (by hash).
type Code struct {
	Hash          string
	ClientID      string
	UserID        string
	RedirectURI   string
	Scope         string
	CodeChallenge string // S256 of the verifier
	ExpiresAt     time.Time
}

// RefreshToken is a refresh token as stored (by hash).
type RefreshToken struct {
	Hash      string
	FamilyID  string
	ClientID  string
	UserID    string
	Scope     string
	ExpiresAt time.Time
}

// GrantStore keeps codes, refresh tokens and revocations.
//
// A refresh-token family is everything one authorization code started: its
// refresh tokens and the access tokens issued with them (they carry the family
// in their sid claim). Revoking a family records it in a revocation list that
// refuses its refresh tokens, those saved after the revocation included, and
// its access tokens (AccessTokenRevoked).
type GrantStore interface {
	SaveCode(ctx context.Context, c *Code) error
	// UseCode marks a code used by the family it starts and returns it; an
	// expired or unknown code is ErrInvalidGrant. A code used before is
	// ErrInvalidGrant too and revokes the family it started (RFC 6749 §4.1.2).
	UseCode(ctx context.Context, hash, family string, now time.Time) (*Code, error)
	SaveRefreshToken(ctx context.Context, t *RefreshToken) error
	// UseRefreshToken marks a live refresh token used and returns it. A token
	// used before revokes its whole family and is ErrInvalidGrant.
	UseRefreshToken(ctx context.Context, hash string, now time.Time) (*RefreshToken, error)
	// RevokeRefreshFamily revokes the family of clientID's refresh token; another
	// client's token is left alone.
	// It returns the family's ID ("" for a token it does not know).
	RevokeRefreshFamily(ctx context.Context, clientID, hash string, now time.Time) (string, error)
	RevokeAccessToken(ctx context.Context, jti string, expiresAt time.Time) error
	// AccessTokenRevoked reports whether the access token jti, or its family
	// (when not empty), was revoked.
	AccessTokenRevoked(ctx context.Context, jti, family string) (bool, error)
}

// RevokedFamilyTTL is how long a revoked family stays listed: longer than any
// of its tokens can live.
const RevokedFamilyTTL = RefreshTokenTTL + AccessTokenTTL

// NewSecret returns a random 256-bit token and its hash (what is stored).
func NewSecret() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken hashes a code or refresh token for storage.
func HashToken(token string) string { return secret.Hash(token) }

// S256 is the PKCE challenge of a verifier (RFC 7636).
func S256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// VerifierMatches checks a PKCE verifier against its challenge in constant time.
// Verifiers are 43 to 128 characters (RFC 7636 §4.1).
func VerifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(S256(verifier)), []byte(challenge)) == 1
}
