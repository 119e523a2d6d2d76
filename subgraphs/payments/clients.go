package payments

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/internal/weborigin"
)

// Client is a service client: a trusted backend that sells offers to its own
// customers' billing accounts. Its secret is stored as a hash only.
type Client struct {
	ID   string
	Name string
	// KeyID binds the client to a developer key: it may resolve that key's
	// AI-credit account (reference = the key's ID) and sell it credits.
	KeyID string
	// CallbackURL receives the signed fulfillment callbacks.
	CallbackURL string
	// ReturnURLs are where a hosted session may send the browser back;
	// Origins may embed the hosted checkout in an iframe.
	ReturnURLs []string
	Origins    []string
	// ResourceTypes the client may sell and see offers of.
	ResourceTypes []string
	Scopes        []string
	// RequireAssertion: billing-account routes need a signed assertion made
	// with one of AssertionKeys (see assertion.go).
	RequireAssertion bool
	AssertionKeys    []AssertionKey
	// Denied actions answer 403 action_not_allowed.
	Denied    []string
	CreatedAt time.Time
	RevokedAt *time.Time
	// SecretHash is the current secret's hash; PreviousSecretHash keeps
	// working until PreviousSecretExpiresAt (a rotation's grace period).
	SecretHash              string
	PreviousSecretHash      string
	PreviousSecretExpiresAt *time.Time
	// Signing is the sealed secret that signs callbacks; PreviousSigning
	// signs beside it until PreviousSigningExpiresAt (a rotation).
	Signing                  *envelope.Sealed
	PreviousSigning          *envelope.Sealed
	PreviousSigningExpiresAt *time.Time
	// CallbacksDisabledAt: the receiver answered 410; nothing is sent until
	// callbacks are turned on again.
	CallbacksDisabledAt *time.Time
}

// Actions a client's policy can deny (vitola payments clients create --deny).
const (
	ActionResolveAccount      = "billing_accounts.resolve"
	ActionAutoReload          = "billing_accounts.auto_reload"
	ActionListOffers          = "offers.list"
	ActionCreateOffer         = "offers.create"
	ActionCreateSession       = "payment_sessions.create"
	ActionSessionStatus       = "payment_sessions.status"
	ActionListMerchants       = "merchant_accounts.list"
	ActionCreateMerchant      = "merchant_accounts.create"
	ActionMerchantCredentials = "merchant_accounts.credentials"
)

// Actions lists every action, in the order the docs give them.
var Actions = []string{ActionResolveAccount, ActionAutoReload, ActionListOffers, ActionCreateOffer, ActionCreateSession,
	ActionSessionStatus, ActionListMerchants, ActionCreateMerchant, ActionMerchantCredentials}

// Scopes a client may be given.
const (
	ScopeMerchantRead  = "merchant_accounts:read"
	ScopeMerchantWrite = "merchant_accounts:write"
)

// Scopes lists every scope.
var Scopes = []string{ScopeMerchantRead, ScopeMerchantWrite}

// actionScopes: the scope an action needs beyond not being denied.
var actionScopes = map[string]string{
	ActionListMerchants:       ScopeMerchantRead,
	ActionCreateMerchant:      ScopeMerchantWrite,
	ActionMerchantCredentials: ScopeMerchantWrite,
}

// SecretGrace is how long a rotated-out client secret keeps working: long
// enough to roll the new secret out to every backend instance.
const SecretGrace = 24 * time.Hour

// Allow checks the client's policy for an action: not denied, and the scope
// it needs granted. The refusal is 403 action_not_allowed.
func (c *Client) Allow(action string) error {
	if slices.Contains(c.Denied, action) {
		return Refuse(CodeActionNotAllowed, "this client's policy does not allow %s", action)
	}
	if scope, ok := actionScopes[action]; ok && !slices.Contains(c.Scopes, scope) {
		return Refuse(CodeActionNotAllowed, "this client lacks the %s scope that %s needs", scope, action)
	}
	return nil
}

// SellsType reports whether the client may sell and list a resource type.
func (c *Client) SellsType(resourceType string) bool {
	return slices.Contains(c.ResourceTypes, resourceType)
}

// CheckSecret reports, in constant time, whether plain is the client's
// current secret or its previous one within the grace period.
func (c *Client) CheckSecret(plain string, now time.Time) bool {
	if c.RevokedAt != nil {
		return false
	}
	h := secret.Hash(plain)
	ok := subtle.ConstantTimeCompare([]byte(h), []byte(c.SecretHash)) == 1
	if c.PreviousSecretHash != "" && c.PreviousSecretExpiresAt != nil && now.Before(*c.PreviousSecretExpiresAt) {
		ok = subtle.ConstantTimeCompare([]byte(h), []byte(c.PreviousSecretHash)) == 1 || ok
	}
	return ok
}

// ReturnAllowed reports whether u may be a session's return or cancel URL:
// its scheme, host and path equal those of a registered return URL (the query
// may add parameters; no fragment).
func (c *Client) ReturnAllowed(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || pu.Fragment != "" || pu.User != nil {
		return false
	}
	for _, r := range c.ReturnURLs {
		ru, err := url.Parse(r)
		if err == nil && strings.EqualFold(ru.Scheme, pu.Scheme) && strings.EqualFold(ru.Host, pu.Host) && ru.EscapedPath() == pu.EscapedPath() {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether origin is registered to embed the checkout.
func (c *Client) OriginAllowed(origin string) bool {
	o, err := weborigin.Normalize(origin)
	return err == nil && slices.Contains(c.Origins, o)
}

// NewClient is what `vitola payments clients create` asks for.
type NewClient struct {
	Name             string
	KeyID            string
	CallbackURL      string
	ReturnURLs       []string
	Origins          []string
	ResourceTypes    []string
	Scopes           []string
	RequireAssertion bool
	// AssertionKeys are PEM public keys (Ed25519, ECDSA P-256, RSA ≥ 2048).
	AssertionKeys []string
	Denied        []string
}

// Validate checks a new client and returns its normalized form.
func (n NewClient) Validate() (NewClient, []AssertionKey, error) {
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || len(n.Name) > 100 {
		return n, nil, Invalid("--name: give the client a name of 1 to 100 characters")
	}
	if n.CallbackURL != "" {
		if err := checkWebURL(n.CallbackURL); err != nil {
			return n, nil, Invalid("--callback-url %q: %v", n.CallbackURL, err)
		}
	}
	for _, r := range n.ReturnURLs {
		if err := checkWebURL(r); err != nil {
			return n, nil, Invalid("--return-url %q: %v", r, err)
		}
	}
	origins := make([]string, 0, len(n.Origins))
	for _, o := range n.Origins {
		norm, err := weborigin.Normalize(o)
		if err != nil {
			return n, nil, Invalid("--origin %q: want https://HOST[:PORT] (http only for localhost), without a path", o)
		}
		origins = append(origins, norm)
	}
	n.Origins = origins
	if len(n.ResourceTypes) == 0 {
		n.ResourceTypes = []string{AICredits}
	}
	for _, s := range n.Scopes {
		if !slices.Contains(Scopes, s) {
			return n, nil, Invalid("--scope %q: want one of %s", s, strings.Join(Scopes, ", "))
		}
	}
	for _, a := range n.Denied {
		if !slices.Contains(Actions, a) {
			return n, nil, Invalid("--deny %q: want one of %s", a, strings.Join(Actions, ", "))
		}
	}
	keys := make([]AssertionKey, 0, len(n.AssertionKeys))
	for i, pem := range n.AssertionKeys {
		k, err := ParseAssertionKey(pem)
		if err != nil {
			return n, nil, Invalid("--assertion-key %d: %v", i+1, err)
		}
		keys = append(keys, k)
	}
	if n.RequireAssertion && len(keys) == 0 {
		return n, nil, Invalid("--require-assertion needs at least one --assertion-key (a PEM public key file) to check assertions with")
	}
	slices.Sort(n.Scopes)
	n.Scopes = slices.Compact(n.Scopes)
	slices.Sort(n.Denied)
	n.Denied = slices.Compact(n.Denied)
	return n, keys, nil
}

// checkWebURL accepts an absolute https URL, or http on loopback (for
// development), without credentials or a fragment.
func checkWebURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("want an absolute URL such as https://shop.example/paid")
	}
	if u.User != nil || u.Fragment != "" {
		return fmt.Errorf("a URL here carries no user name, password or #fragment")
	}
	if !weborigin.SecureScheme(u) {
		return fmt.Errorf("use https (http only for localhost)")
	}
	return nil
}

// Clients keeps service clients.
type Clients interface {
	// CreateClient stores a new client with its secret's hash.
	CreateClient(ctx context.Context, c *Client) error
	Client(ctx context.Context, id string) (*Client, error)
	ListClients(ctx context.Context) ([]Client, error)
	// RotateSecret installs a new secret hash; the current one keeps working
	// until graceUntil.
	RotateSecret(ctx context.Context, id, newHash string, graceUntil time.Time) error
	RevokeClient(ctx context.Context, id string, at time.Time) error
	// UseAssertion records an assertion's jti until expiresAt, or fails with
	// ErrConflict when the client used it already.
	UseAssertion(ctx context.Context, clientID, jti string, expiresAt time.Time) error
}
