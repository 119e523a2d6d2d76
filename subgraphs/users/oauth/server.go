package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/users"
)

// Server is the authorization server's logic: the OAuth 2.1 authorization-code
// grant with PKCE (S256 only), refresh-token rotation with reuse detection, and
// revocation (RFC 7009). HTTP lives in the REST shim; this is what it calls.
type Server struct {
	Issuer  string
	Users   users.Store
	Clients Store
	Grants  GrantStore
	Now     func() time.Time

	mu      sync.Mutex
	revoked map[string]revokedVerdict // jti → verdict, cached briefly
}

type revokedVerdict struct {
	revoked bool
	until   time.Time
}

// RevocationCacheTTL bounds how long a replica may keep accepting a revoked
// access token (the contract: within one second).
const RevocationCacheTTL = 500 * time.Millisecond

// Errors of the browser flow.
var (
	ErrBadCredentials = errors.New("wrong email or password")
	ErrInvalidRequest = errors.New("invalid_request")
)

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// dummyHash keeps a login for an unknown email as slow as one for a known
// email. It is made on first use (or by WarmUp), not when the package loads:
// argon2 takes 64 MiB and a fifth of a second, which every vitola command paid
// at start (most of a 1,000-cigar import's 0.3 s).
var dummyHash = sync.OnceValue(func() string {
	h, _ := users.HashPassword("a password nobody has, for timing")
	return h
})

// WarmUp makes, ahead of the first login, what a login for an unknown email
// compares against, so that the first one is not the slower: the users
// subgraph calls it in the background when it starts.
func WarmUp() { dummyHash() }

// Authenticate checks a user's credentials and returns the user's ID.
func (s *Server) Authenticate(ctx context.Context, email, password string) (string, error) {
	u, err := s.Users.UserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, users.ErrNotFound) {
		users.CheckPassword(dummyHash(), password)
		return "", ErrBadCredentials
	}
	if err != nil {
		return "", err
	}
	if !users.CheckPassword(u.PasswordHash, password) {
		return "", ErrBadCredentials
	}
	return u.ID, nil
}

// AuthorizeRequest is what an authorization request asks for.
type AuthorizeRequest struct {
	ResponseType, ClientID, RedirectURI, Scope, State, CodeChallenge, CodeChallengeMethod string
}

// CheckClientAndRedirect validates the client and its redirect URI: until both
// are known good, errors are shown to the user, never redirected (an open
// redirector otherwise).
func (s *Server) CheckClientAndRedirect(ctx context.Context, clientID, redirectURI string) (*Client, error) {
	c, err := s.Clients.Client(ctx, clientID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: unknown client_id", ErrInvalidRequest)
	}
	if err != nil {
		return nil, err
	}
	if !c.RedirectAllowed(redirectURI) {
		return nil, fmt.Errorf("%w: redirect_uri is not registered for this client", ErrInvalidRequest)
	}
	return c, nil
}

// CheckRequest validates the rest of an authorization request; its error is
// the OAuth error code to send back to the client's redirect URI.
func (s *Server) CheckRequest(r AuthorizeRequest) ([]string, string, error) {
	if r.ResponseType != "code" {
		return nil, "unsupported_response_type", errors.New("response_type must be code")
	}
	if r.CodeChallenge == "" || r.CodeChallengeMethod != "S256" {
		return nil, "invalid_request", errors.New("PKCE is required: code_challenge with code_challenge_method=S256")
	}
	scopes, err := ParseScope(r.Scope)
	if err != nil {
		return nil, "invalid_scope", err
	}
	return scopes, "", nil
}

// IssueCode records the user's consent as a single-use authorization code.
func (s *Server) IssueCode(ctx context.Context, clientID, userID, redirectURI string, scopes []string, challenge string) (string, error) {
	code, hash := NewSecret()
	err := s.Grants.SaveCode(ctx, &Code{Hash: hash, ClientID: clientID, UserID: userID, RedirectURI: redirectURI,
		Scope: strings.Join(scopes, " "), CodeChallenge: challenge, ExpiresAt: s.now().Add(CodeTTL)})
	return code, err
}

// TokenResponse is the token endpoint's answer (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// authenticateClient checks a client's credentials: a confidential client must
// present its secret; a public client has none (PKCE protects its codes).
func (s *Server) authenticateClient(ctx context.Context, clientID, secret string) (*Client, error) {
	c, err := s.Clients.Client(ctx, clientID)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrInvalidClient
	}
	if err != nil {
		return nil, err
	}
	if c.Public {
		if secret != "" {
			return nil, ErrInvalidClient
		}
		return c, nil
	}
	if !c.CheckSecret(secret) {
		return nil, ErrInvalidClient
	}
	return c, nil
}

// ExchangeCode trades a code and its PKCE verifier for tokens.
func (s *Server) ExchangeCode(ctx context.Context, clientID, secret, code, redirectURI, verifier string) (*TokenResponse, error) {
	c, err := s.authenticateClient(ctx, clientID, secret)
	if err != nil {
		return nil, err
	}
	// The family is recorded with the code, so that a replay of the code can
	// revoke what it issued.
	family := ids.New("rtf")
	grant, err := s.Grants.UseCode(ctx, HashToken(code), family, s.now())
	if err != nil {
		return nil, err
	}
	if grant.ClientID != c.ID || grant.RedirectURI != redirectURI || !VerifierMatches(verifier, grant.CodeChallenge) {
		return nil, ErrInvalidGrant
	}
	return s.issue(ctx, c.ID, grant.UserID, grant.Scope, family)
}

// Refresh rotates a refresh token: the old one is spent, a new one of the same
// family comes back with a new access token.
func (s *Server) Refresh(ctx context.Context, clientID, secret, refreshToken string) (*TokenResponse, error) {
	c, err := s.authenticateClient(ctx, clientID, secret)
	if err != nil {
		return nil, err
	}
	rt, err := s.Grants.UseRefreshToken(ctx, HashToken(refreshToken), s.now())
	if err != nil {
		return nil, err
	}
	if rt.ClientID != c.ID {
		return nil, ErrInvalidGrant
	}
	return s.issue(ctx, c.ID, rt.UserID, rt.Scope, rt.FamilyID)
}

func (s *Server) issue(ctx context.Context, clientID, userID, scope, family string) (*TokenResponse, error) {
	now := s.now()
	keys, err := LiveKeys(ctx, s.Clients, now)
	if err != nil {
		return nil, err
	}
	access, _, err := keys.SignInFamily(s.Issuer, family, userID, clientID, strings.Fields(scope), now)
	if err != nil {
		return nil, err
	}
	refresh, hash := NewSecret()
	if err := s.Grants.SaveRefreshToken(ctx, &RefreshToken{Hash: hash, FamilyID: family, ClientID: clientID, UserID: userID, Scope: scope, ExpiresAt: now.Add(RefreshTokenTTL)}); err != nil {
		return nil, err
	}
	return &TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(AccessTokenTTL.Seconds()), RefreshToken: refresh, Scope: scope}, nil
}

// Revoked says what a revocation reached, for the live streams opened with
// it: an access token (TokenID) or a refresh-token family (FamilyID).
type Revoked struct{ TokenID, FamilyID string }

// Revoke revokes a refresh token (its whole family, access tokens included:
// RFC 7009 §2.1) or an access token (by its jti). Either stops working on every
// replica within RevocationCacheTTL. Unknown tokens are no error (RFC 7009
// §2.2) and revoke nothing (nil); a token of another client is left alone.
func (s *Server) Revoke(ctx context.Context, clientID, secret, token string) (*Revoked, error) {
	c, err := s.authenticateClient(ctx, clientID, secret)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if strings.Count(token, ".") == 2 { // a JWT: an access token
		keys, err := LiveKeys(ctx, s.Clients, now)
		if err != nil {
			return nil, err
		}
		claims, err := accesstoken.Verifier{Issuer: s.Issuer, Keys: keys.PublicKeys(), Now: s.Now}.Verify(token)
		if err != nil || claims.ClientID != c.ID {
			return nil, nil
		}
		if err := s.Grants.RevokeAccessToken(ctx, claims.ID, claims.ExpiresAt.Time); err != nil {
			return nil, err
		}
		return &Revoked{TokenID: claims.ID}, nil
	}
	family, err := s.Grants.RevokeRefreshFamily(ctx, c.ID, HashToken(token), now)
	if err != nil || family == "" {
		return nil, err
	}
	return &Revoked{FamilyID: family}, nil
}

// AccessTokenRevoked reports whether an access token (by its jti and the
// family of its sid claim) was revoked, caching the verdict for
// RevocationCacheTTL: a revocation reaches every replica within it.
func (s *Server) AccessTokenRevoked(ctx context.Context, jti, family string) (bool, error) {
	now := s.now()
	s.mu.Lock()
	if v, ok := s.revoked[jti]; ok && now.Before(v.until) {
		s.mu.Unlock()
		return v.revoked, nil
	}
	s.mu.Unlock()
	revoked, err := s.Grants.AccessTokenRevoked(ctx, jti, family)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.revoked == nil || len(s.revoked) > 100000 {
		s.revoked = map[string]revokedVerdict{}
	}
	s.revoked[jti] = revokedVerdict{revoked: revoked, until: now.Add(RevocationCacheTTL)}
	s.mu.Unlock()
	return revoked, nil
}
