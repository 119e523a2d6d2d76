// Package oauth is the users subgraph's authorization-server domain: registered
// clients, scopes, the keys that sign access tokens, and the tokens themselves
// (RFC 9068 JWTs).
package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/secret"
)

// ErrUnknownScope names a scope outside the scopes a token can carry
// (accesstoken.Scopes).
var ErrUnknownScope = fmt.Errorf("unknown scope (known: %s)", strings.Join(accesstoken.Scopes, " "))

// ParseScope splits a space-separated scope string, checking every scope.
func ParseScope(s string) ([]string, error) {
	var out []string
	for _, sc := range strings.Fields(s) {
		if !slices.Contains(accesstoken.Scopes, sc) && !strings.HasSuffix(sc, ":write") {
			return nil, fmt.Errorf("%s: %w", apierr.Quote(sc), ErrUnknownScope)
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("at least one scope is required")
	}
	return out, nil
}

// Client is a registered application.
type Client struct {
	ID           string
	Name         string
	SecretHash   string // empty for public clients
	RedirectURIs []string
	Public       bool
	CreatedAt    time.Time
}

// Errors.
var (
	ErrNotFound       = errors.New("not found")
	ErrBadRedirectURI = errors.New("redirect URIs must be absolute https URLs (http only for localhost), without fragments")
	ErrBadClientName  = errors.New("client name must be 1 to 100 characters")
)

// NewClient validates a registration and returns the client and, for a
// confidential client, its secret (shown once; only its hash is kept).
func NewClient(name string, redirectURIs []string, public bool, now time.Time) (*Client, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 100 {
		return nil, "", ErrBadClientName
	}
	if len(redirectURIs) == 0 {
		return nil, "", fmt.Errorf("at least one redirect URI: %w", ErrBadRedirectURI)
	}
	for _, u := range redirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, "", fmt.Errorf("%q: %w", u, err)
		}
	}
	c := &Client{ID: ids.New("cli"), Name: name, RedirectURIs: redirectURIs, Public: public, CreatedAt: now.UTC().Truncate(time.Millisecond)}
	plain := ""
	if !public {
		b := make([]byte, 32)
		rand.Read(b)
		plain = "cs_" + base64.RawURLEncoding.EncodeToString(b)
		c.SecretHash = secret.Hash(plain)
	}
	return c, plain, nil
}

func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Fragment != "" || u.Host == "" {
		return ErrBadRedirectURI
	}
	local := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"
	if u.Scheme != "https" && !(u.Scheme == "http" && local) {
		return ErrBadRedirectURI
	}
	return nil
}

// RedirectAllowed matches a redirect URI exactly against the registered ones.
func (c *Client) RedirectAllowed(uri string) bool { return slices.Contains(c.RedirectURIs, uri) }

// CheckSecret compares a presented secret in constant time.
func (c *Client) CheckSecret(presented string) bool {
	if c.Public || c.SecretHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(secret.Hash(presented)), []byte(c.SecretHash)) == 1
}

// SigningKey signs access tokens (ES256).
type SigningKey struct {
	KID       string
	Private   *ecdsa.PrivateKey
	CreatedAt time.Time
	RetiredAt *time.Time
}

// NewSigningKey generates a P-256 key.
func NewSigningKey(now time.Time) (*SigningKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &SigningKey{KID: ids.New("sk"), Private: k, CreatedAt: now.UTC().Truncate(time.Millisecond)}, nil
}

// EncodePEM and DecodePEM store a key's private half.
func (k *SigningKey) EncodePEM() (string, error) {
	der, err := x509.MarshalECPrivateKey(k.Private)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})), nil
}

// DecodePEM parses a stored private key.
func DecodePEM(s string) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil, errors.New("not a PEM key")
	}
	return x509.ParseECPrivateKey(b.Bytes)
}

// Store keeps clients and signing keys (the users subgraph's store).
type Store interface {
	CreateClient(ctx context.Context, c *Client) error
	Client(ctx context.Context, id string) (*Client, error)
	// SigningKeys returns the keys not retired before since, newest first.
	SigningKeys(ctx context.Context, since time.Time) ([]*SigningKey, error)
	AddSigningKey(ctx context.Context, k *SigningKey) error
	RetireSigningKeys(ctx context.Context, except string, at time.Time) error
}
