package payments

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/internal/weborigin"
)

// Store is everything the payments subgraph keeps.
type Store interface {
	Ledger
	Clients
	Offers
	Merchants
	Sessions
	Callbacks
	// ClientAccount finds or creates a client's account for its reference.
	ClientAccount(ctx context.Context, clientID, reference string) (*Account, error)
}

// Service holds the payments rules; the store keeps the data and the gateways
// move money.
type Service struct {
	Store    Store
	Gateways map[string]Gateway
	// Keys seal gateway credentials and vault references.
	Keys *envelope.Keyring
	// Audience is the payments API's base URL: assertions must name it.
	Audience string
	// ChargeLease is how long a charge attempt is leased before another
	// replica repeats it under the same key (default DefaultChargeLease).
	ChargeLease time.Duration
	Now         func() time.Time

	cachesOnce sync.Once
	caches     *caches
}

// cached is the process's row caches (rowcache.go).
func (s *Service) cached() *caches {
	s.cachesOnce.Do(func() { s.caches = newCaches() })
	return s.caches
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// GatewayNames lists the configured gateways, sorted.
func (s *Service) GatewayNames() []string {
	names := make([]string, 0, len(s.Gateways))
	for n := range s.Gateways {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ClientSecretPrefix begins every service client secret (so scanners and
// people recognize one).
const ClientSecretPrefix = "vps_"

// NewClientSecret makes a client secret: 256 bits, base62.
func NewClientSecret() string { return ClientSecretPrefix + secret.Base62(43) }

// CreateClient registers a service client and returns it with its secret
// and its callback signing secret, shown this once.
func (s *Service) CreateClient(ctx context.Context, n NewClient) (*Client, string, string, error) {
	n, keys, err := n.Validate()
	if err != nil {
		return nil, "", "", err
	}
	for _, t := range n.ResourceTypes {
		if _, err := s.Store.ResourceType(ctx, t); errors.Is(err, ErrNotFound) {
			return nil, "", "", Invalid("--resource-type %s is not registered (vitola payments resource-types add)", apierr.Quote(t))
		} else if err != nil {
			return nil, "", "", err
		}
	}
	plain := NewClientSecret()
	c := &Client{ID: ids.New(ids.ServiceClient), Name: n.Name, KeyID: n.KeyID, CallbackURL: n.CallbackURL, ReturnURLs: n.ReturnURLs,
		Origins: n.Origins, ResourceTypes: n.ResourceTypes, Scopes: n.Scopes, RequireAssertion: n.RequireAssertion,
		AssertionKeys: keys, Denied: n.Denied, CreatedAt: s.now().UTC().Truncate(time.Millisecond), SecretHash: secret.Hash(plain)}
	signing := NewSigningSecret()
	sealed, err := s.Keys.Seal([]byte(signing), signingAAD(c.ID))
	if err != nil {
		return nil, "", "", err
	}
	c.Signing = &sealed
	if err := s.Store.CreateClient(ctx, c); err != nil {
		return nil, "", "", err
	}
	return c, plain, signing, nil
}

// RotateClientSecret gives a client a new secret; the old one works for
// SecretGrace more.
func (s *Service) RotateClientSecret(ctx context.Context, id string) (string, time.Time, error) {
	c, err := s.Store.Client(ctx, id)
	if err != nil {
		return "", time.Time{}, err
	}
	if c.RevokedAt != nil {
		return "", time.Time{}, fmt.Errorf("%w: client %s is revoked", ErrConflict, id)
	}
	plain := NewClientSecret()
	until := s.now().Add(SecretGrace).UTC().Truncate(time.Millisecond)
	if err := s.Store.RotateSecret(ctx, id, secret.Hash(plain), until); err != nil {
		return "", time.Time{}, err
	}
	s.cached().clients.forget(id)
	return plain, until, nil
}

// RevokeClient revokes a service client: this process refuses it at once,
// other replicas within ClientCacheTTL.
func (s *Service) RevokeClient(ctx context.Context, id string) error {
	if err := s.Store.RevokeClient(ctx, id, s.now()); err != nil {
		return err
	}
	s.cached().clients.forget(id)
	return nil
}

// Authenticate returns the client whose ID and secret these are, or
// ErrNotFound for anything else (unknown, revoked, wrong secret): callers
// answer all of those alike.
func (s *Service) Authenticate(ctx context.Context, id, plain string) (*Client, error) {
	if !ids.Valid(id, ids.ServiceClient) || !strings.HasPrefix(plain, ClientSecretPrefix) {
		return nil, ErrNotFound
	}
	c, err := s.cached().clients.get(ctx, id, s.Store.Client)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if !c.CheckSecret(plain, s.now()) {
		return nil, ErrNotFound
	}
	return c, nil
}

// ActiveClient loads the client a call acts for and checks its policy for
// action. The shim authenticated it; it may have been revoked since (seen
// within ClientCacheTTL). The client returned is shared: callers only read it.
func (s *Service) ActiveClient(ctx context.Context, id, action string) (*Client, error) {
	c, err := s.cached().clients.get(ctx, id, s.Store.Client)
	if errors.Is(err, ErrNotFound) || (err == nil && c.RevokedAt != nil) {
		return nil, Refuse(CodeClientNotActive, "this service client is not active")
	}
	if err != nil {
		return nil, err
	}
	return c, c.Allow(action)
}

// MaxReferenceLength bounds a billing account reference.
const MaxReferenceLength = 200

func checkReference(ref string) error {
	if ref == "" || len(ref) > MaxReferenceLength || strings.ContainsFunc(ref, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return Invalid("accountReference: want your own ID for the customer, 1 to 200 visible ASCII characters")
	}
	return nil
}

// AccountRequest names a client's account, with its assertion.
type AccountRequest struct {
	Reference string
	Assertion string
}

// ResolveAccount finds or creates the client's account for a reference. A
// client bound to a developer key names that key's ID as the reference to
// reach the key's AI-credit account. For a client that requires assertions,
// the assertion is checked and its jti spent.
func (s *Service) ResolveAccount(ctx context.Context, c *Client, req AccountRequest) (*Account, error) {
	if err := checkReference(req.Reference); err != nil {
		return nil, err
	}
	if c.RequireAssertion {
		claims, err := VerifyAssertion(req.Assertion, c, req.Reference, s.Audience, s.now())
		if err != nil {
			return nil, err
		}
		if err := s.Store.UseAssertion(ctx, c.ID, claims.JTI, claims.ExpiresAt); errors.Is(err, ErrConflict) {
			return nil, assertionReplayed()
		} else if err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(req.Reference, ids.Key+"_") {
		if c.KeyID == "" || req.Reference != c.KeyID {
			return nil, Refuse(CodeActionNotAllowed, "references starting with key_ name developer keys, and this client is not bound to that key")
		}
		return s.ownerCached(s.Store.Account(ctx, c.KeyID))
	}
	return s.ownerCached(s.Store.ClientAccount(ctx, c.ID, req.Reference))
}

// ownerCached keeps a resolved account's owner for the sessions its client
// creates next (sessionParts).
func (s *Service) ownerCached(a *Account, err error) (*Account, error) {
	if err == nil {
		s.cacheOwner(a)
	}
	return a, err
}

// ownsAccount reports whether the account is the client's.
func ownsAccount(c *Client, a *Account) bool {
	return (a.ClientID != "" && a.ClientID == c.ID) || (a.KeyID != "" && a.KeyID == c.KeyID)
}

// clientAccount passes the account id the store read (a, nil when there is
// none) if it is the client's.
func clientAccount(c *Client, id string, a *Account) (*Account, error) {
	if a == nil || !ownsAccount(c, a) {
		return nil, Refuse(CodeAccountNotFound, "no billing account %s for this client: resolve the account first", apierr.Clip(id))
	}
	return a, nil
}

// ListOffers lists the active offers of a type the client sells.
func (s *Service) ListOffers(ctx context.Context, c *Client, resourceType string) ([]Offer, error) {
	if !ValidResourceTypeName(resourceType) {
		return nil, Invalid("resourceType: want a resource type such as ai_credits")
	}
	if !c.SellsType(resourceType) {
		return nil, Refuse(CodeActionNotAllowed, "this client does not sell %s", apierr.Clip(resourceType))
	}
	return s.Store.ActiveOffers(ctx, c.ID, resourceType)
}

// CreateOffer creates an offer: the client's (c set) or the platform's (c nil,
// an operator). Its merchant account must be ready.
func (s *Service) CreateOffer(ctx context.Context, c *Client, n NewOffer) (*Offer, error) {
	n, err := n.Validate()
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.ResourceType(ctx, n.ResourceType); errors.Is(err, ErrNotFound) {
		return nil, Refuse(CodeResourceTypeUnknown, "resource type %s is not registered", apierr.Clip(n.ResourceType))
	} else if err != nil {
		return nil, err
	}
	clientID := ""
	if c != nil {
		clientID = c.ID
		if n.ResourceType == AICredits {
			return nil, Refuse(CodeActionNotAllowed, "ai_credits are sold only through the platform's offers: list them with GET /offers?resourceType=ai_credits")
		}
		if !c.SellsType(n.ResourceType) {
			return nil, Refuse(CodeActionNotAllowed, "this client does not sell %s", apierr.Clip(n.ResourceType))
		}
	}
	m, err := s.merchant(ctx, clientID, n.MerchantID)
	if err != nil {
		return nil, err
	}
	if !m.Ready() {
		return nil, Refuse(CodeMerchantNotReady, "merchant account %s has no usable gateway credentials yet: configure them first", m.ID)
	}
	o := &Offer{ID: cmp.Or(n.ID, ids.New(ids.Offer)), ClientID: clientID, ResourceType: n.ResourceType, Name: n.Name, Quantity: n.Quantity,
		Price: n.Price, Currency: n.Currency, MerchantID: m.ID, Active: true, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	return o, s.Store.CreateOffer(ctx, o)
}

// merchant loads a merchant account owned by clientID ("" : the platform's).
func (s *Service) merchant(ctx context.Context, clientID, id string) (*MerchantAccount, error) {
	m, err := s.Store.Merchant(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && m.ClientID != clientID) {
		return nil, Refuse(CodeMerchantNotFound, "no merchant account %s here", apierr.Clip(id))
	}
	return m, err
}

// CreateMerchant creates a merchant account without credentials.
func (s *Service) CreateMerchant(ctx context.Context, clientID string, n NewMerchant) (*MerchantAccount, error) {
	n, err := n.Validate(s.GatewayNames())
	if err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	m := &MerchantAccount{ID: cmp.Or(n.ID, ids.New(ids.MerchantAccount)), ClientID: clientID, Name: n.Name, Gateway: n.Gateway,
		Status: MerchantUnconfigured, CreatedAt: now, UpdatedAt: now}
	return m, s.Store.CreateMerchant(ctx, m)
}

// SetMerchantCredentials checks, seals and stores a merchant account's
// gateway credentials (a JSON object the gateway defines), replacing any.
func (s *Service) SetMerchantCredentials(ctx context.Context, clientID, id string, creds []byte) (*MerchantAccount, error) {
	m, err := s.merchant(ctx, clientID, id)
	if err != nil {
		return nil, err
	}
	if !json.Valid(creds) || len(creds) == 0 || creds[0] != '{' {
		return nil, Invalid("credentials: want a JSON object")
	}
	g, ok := s.Gateways[m.Gateway]
	if !ok {
		return nil, Refuse(CodeMerchantNotReady, "gateway %s is not available on this server", m.Gateway)
	}
	if err := g.CheckCredentials(creds); err != nil {
		return nil, Invalid("credentials: %v", err)
	}
	sealed, err := s.Keys.Seal(creds, m.ID)
	if err != nil {
		return nil, err
	}
	if err := s.Store.SetCredentials(ctx, m.ID, &sealed, MerchantReady, s.now()); err != nil {
		return nil, err
	}
	s.cached().merchants.forget(m.ID)
	return s.Store.Merchant(ctx, m.ID)
}

// RevokeMerchantCredentials deletes a merchant account's credentials: nothing
// can be charged through it until new ones are configured.
func (s *Service) RevokeMerchantCredentials(ctx context.Context, clientID, id string) (*MerchantAccount, error) {
	m, err := s.merchant(ctx, clientID, id)
	if err != nil {
		return nil, err
	}
	if err := s.Store.SetCredentials(ctx, m.ID, nil, MerchantRevoked, s.now()); err != nil {
		return nil, err
	}
	s.cached().merchants.forget(m.ID)
	return s.Store.Merchant(ctx, m.ID)
}

// credentials opens a ready merchant account's credentials and its gateway.
func (s *Service) credentials(m *MerchantAccount) (Gateway, []byte, error) {
	g, ok := s.Gateways[m.Gateway]
	if !ok || !m.Ready() {
		return nil, nil, Refuse(CodeMerchantNotReady, "merchant account %s cannot take payments now", m.ID)
	}
	creds, err := s.Keys.Open(*m.Credentials, m.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("open credentials of %s: %w", m.ID, err)
	}
	return g, creds, nil
}

// RewrapAll moves every sealed record to the current KEK; it returns how
// many it rewrapped. Old KEKs can be retired afterwards.
func (s *Service) RewrapAll(ctx context.Context) (int, error) {
	recs, err := s.Store.SealedRecords(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if r.Sealed.KEKID == s.Keys.Current() {
			continue
		}
		re, err := s.Keys.Rewrap(r.Sealed, r.AAD)
		if err != nil {
			return n, fmt.Errorf("rewrap %s: %w", r.ID, err)
		}
		r.Sealed = re
		if err := s.Store.Rewrapped(ctx, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// NewSessionToken makes a session's one-time token: 256 bits, URL-safe.
func NewSessionToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CreateSession creates a hosted payment session and its purchase intent; it
// returns the one-time token, shown this once.
func (s *Service) CreateSession(ctx context.Context, c *Client, n NewSession) (*CreatedSession, error) {
	created, err := s.createSession(ctx, c, n)
	var coded *CodedError
	if err != nil && n.Key != nil && ((errors.As(err, &coded) && coded.Code != CodeKeyReused) || errors.Is(err, ErrInvalid)) {
		// A retry of a create that succeeded gets its answer even when what
		// it was checked against has changed since (an offer withdrawn), as
		// a claim taken before any check used to give it; and the key with
		// another request is refused as reused, before any other refusal.
		if kept, kerr := s.Store.KeptCreate(ctx, c.ID, n.Key.Key, s.now()); kerr == nil {
			return replay(kept, n.Key)
		} else if !errors.Is(kerr, ErrNotFound) {
			return nil, kerr
		}
	}
	return created, err
}

// replay answers a create whose key held an earlier create.
func replay(kept *KeptCreate, key *SessionKey) (*CreatedSession, error) {
	if kept.RequestHash != key.RequestHash {
		return nil, Refuse(CodeKeyReused, "this Idempotency-Key was used with a different request; use a new key for a new request")
	}
	return &CreatedSession{Token: kept.Token, Document: kept.Document, Replayed: true}, nil
}

func (s *Service) createSession(ctx context.Context, c *Client, n NewSession) (*CreatedSession, error) {
	if n.ReturnURL == "" {
		return nil, Invalid("returnUrl: give the URL the browser returns to after paying")
	}
	if n.CancelURL == "" {
		n.CancelURL = n.ReturnURL
	}
	ttl := n.TTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	if ttl < MinSessionTTL || ttl > MaxSessionTTL {
		return nil, Invalid("expiresInSeconds: want %d to %d (default %d)", int(MinSessionTTL.Seconds()), int(MaxSessionTTL.Seconds()), int(DefaultSessionTTL.Seconds()))
	}
	if !c.ReturnAllowed(n.ReturnURL) {
		return nil, Refuse(CodeReturnNotAllowed, "returnUrl is not registered for this client (vitola payments clients create --return-url)")
	}
	if !c.ReturnAllowed(n.CancelURL) {
		return nil, Refuse(CodeReturnNotAllowed, "cancelUrl is not registered for this client (vitola payments clients create --return-url)")
	}
	origin := ""
	if n.ParentOrigin != "" {
		o, err := weborigin.Normalize(n.ParentOrigin)
		if err != nil || !slices.Contains(c.Origins, o) {
			return nil, Refuse(CodeOriginNotAllowed, "parentOrigin is not registered for this client (vitola payments clients create --origin)")
		}
		origin = o
	}
	a, o, m, err := s.sessionParts(ctx, n.AccountID, n.OfferID)
	if err != nil {
		return nil, err
	}
	if a, err = clientAccount(c, n.AccountID, a); err != nil {
		return nil, err
	}
	if o == nil {
		err = ErrNotFound
	}
	if o, err = offerFor(c, n.OfferID, o, err); err != nil {
		return nil, err
	}
	if !m.Ready() {
		return nil, Refuse(CodeMerchantNotReady, "the offer's merchant account cannot take payments yet")
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	token := NewSessionToken()
	sess := &Session{ID: ids.New(ids.PaymentSession), ClientID: c.ID, AccountID: a.ID, OfferID: o.ID, TokenHash: secret.Hash(token),
		ReturnURL: n.ReturnURL, CancelURL: n.CancelURL, ParentOrigin: origin, State: SessionOpen, ExpiresAt: now.Add(ttl), CreatedAt: now}
	p := &Purchase{ID: ids.New(ids.Purchase), Kind: PurchaseCheckout, ClientID: c.ID, AccountID: a.ID, OfferID: o.ID, SessionID: sess.ID,
		ResourceType: o.ResourceType, Quantity: o.Quantity, Amount: o.Price, Currency: o.Currency, MerchantID: o.MerchantID,
		State: PurchaseOpen, CreatedAt: now, UpdatedAt: now}
	sess.PurchaseID = p.ID
	created := &CreatedSession{Session: sess, Purchase: p, Token: token, Document: SessionDocument(sess, p, now)}
	var kept *KeptCreate
	if n.Key != nil {
		kept = &KeptCreate{ClientID: c.ID, Key: n.Key.Key, RequestHash: n.Key.RequestHash, SessionID: sess.ID, Token: token,
			Document: created.Document, ExpiresAt: now.Add(SessionKeyRetention)}
	}
	earlier, err := s.Store.CreateSession(ctx, sess, p, kept)
	if err != nil {
		return nil, err
	}
	if earlier != nil {
		return replay(earlier, n.Key)
	}
	return created, nil
}

// availableOffer loads an active offer the client may sell.
func (s *Service) availableOffer(ctx context.Context, c *Client, id string) (*Offer, error) {
	o, err := s.Store.Offer(ctx, id)
	return offerFor(c, id, o, err)
}

// offerFor passes the offer id the store read (o, err) if it is active and
// the client may sell it.
func offerFor(c *Client, id string, o *Offer, err error) (*Offer, error) {
	if errors.Is(err, ErrNotFound) || (err == nil && (!o.Active || (o.ClientID != "" && o.ClientID != c.ID) || !c.SellsType(o.ResourceType))) {
		return nil, Refuse(CodeOfferNotFound, "no active offer %s for this client: list them with GET /offers", apierr.Clip(id))
	}
	return o, err
}

// SessionStatus returns a session of the client's with its purchase; another
// client's session is not found.
func (s *Service) SessionStatus(ctx context.Context, c *Client, id string) (*Session, *Purchase, error) {
	sess, p, err := s.Store.SessionWithPurchase(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && sess.ClientID != c.ID) {
		return nil, nil, Refuse(CodeSessionNotFound, "no payment session %s for this client", apierr.Clip(id))
	}
	if err != nil {
		return nil, nil, err
	}
	return sess, p, nil
}

// AutoReloadRequest configures an account's automatic reload.
type AutoReloadRequest struct {
	AccountRequest
	Enabled         bool
	Threshold       int64
	OfferID         string
	PaymentMethodID string
}

// ConfigureAutoReload sets or turns off an account's reload rule (assertion
// checked as for resolve). Configuring it again clears its failure count.
func (s *Service) ConfigureAutoReload(ctx context.Context, c *Client, req AutoReloadRequest) (*Account, *AutoReload, error) {
	a, err := s.ResolveAccount(ctx, c, req.AccountRequest)
	if err != nil {
		return nil, nil, err
	}
	r := &AutoReload{AccountID: a.ID, ClientID: c.ID, Enabled: req.Enabled, UpdatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if req.Enabled {
		if req.Threshold < 1 || req.Threshold > MaxAmount {
			return nil, nil, Invalid("threshold: want a balance from 1 to 1000000000 below which to reload")
		}
		o, err := s.availableOffer(ctx, c, req.OfferID)
		if err != nil {
			return nil, nil, err
		}
		pm, err := s.Store.PaymentMethod(ctx, a.ID, req.PaymentMethodID)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, Refuse(CodePaymentMethodMissing, "no payment method %s saved for this account", apierr.Clip(req.PaymentMethodID))
		} else if err != nil {
			return nil, nil, err
		}
		if pm.MerchantID != o.MerchantID {
			return nil, nil, Invalid("paymentMethodId: that card is saved with another merchant account than the offer's; save one at checkout of this offer")
		}
		r.Threshold, r.OfferID, r.PaymentMethodID = req.Threshold, o.ID, pm.ID
	}
	if err := s.Store.SetAutoReload(ctx, r); err != nil {
		return nil, nil, err
	}
	a, err = s.Store.AccountByID(ctx, a.ID)
	return a, r, err
}

// AddPaymentMethod vaults a card at the merchant account's gateway and saves
// the reference (sealed) for the account. The card itself is never stored.
func (s *Service) AddPaymentMethod(ctx context.Context, accountID, merchantID string, card Card, makeDefault bool) (*PaymentMethod, error) {
	m, err := s.Store.Merchant(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	g, creds, err := s.credentials(m)
	if err != nil {
		return nil, err
	}
	v, err := g.Vault(ctx, creds, card)
	if err != nil {
		return nil, err
	}
	return s.savePaymentMethod(ctx, accountID, m.ID, v, makeDefault)
}

func newPaymentMethod(accountID, merchantID string, v VaultedCard, makeDefault bool, now time.Time) *PaymentMethod {
	return &PaymentMethod{ID: ids.New(ids.PaymentMethod), AccountID: accountID, MerchantID: merchantID, Brand: v.Brand, Last4: v.Last4,
		ExpMonth: v.ExpMonth, ExpYear: v.ExpYear, Default: makeDefault, CreatedAt: now.UTC().Truncate(time.Millisecond)}
}

// ResourceTypeNames lists the registered resource types' names.
func (s *Service) ResourceTypeNames(ctx context.Context) ([]string, error) {
	ts, err := s.Store.ResourceTypes(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	slices.Sort(names)
	return names, nil
}
