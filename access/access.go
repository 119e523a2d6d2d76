// Package access owns developer keys and their entitlements, shared by the router
// and the REST shim. Keys are stored as SHA-256 hashes of their secret part and
// compared in constant time; the plain key is shown once, when it is created.
package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/internal/weborigin"

	"github.com/vitolahq/vitola/internal/ids"
)

// Entitlements a key can carry.
const (
	// EntitlementAI allows the paid image-matching routes.
	EntitlementAI = "api.ai"
)

var knownEntitlements = []string{EntitlementAI}

// Key is a developer key as stored: never its secret.
type Key struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Entitlements []string `json:"entitlements"`
	// Publishable keys are for websites: public routes only, from Origins only.
	Publishable bool       `json:"publishable"`
	Origins     []string   `json:"origins,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	RevokedAt   *time.Time `json:"revokedAt,omitempty"`
	// Limits are the key's own quotas; a zero field means the default.
	Limits Limits `json:"limits"`
	// TrustedDocumentsOnly keys run on /graphql only trusted documents
	// (Document): any other operation text is refused.
	TrustedDocumentsOnly bool `json:"trustedDocumentsOnly,omitempty"`
}

// AllowsOrigin reports whether a publishable key may be used from origin.
func (k Key) AllowsOrigin(origin string) bool {
	o, err := NormalizeOrigin(origin)
	return err == nil && slices.Contains(k.Origins, o)
}

// NormalizeOrigin checks a website origin (https, or http on localhost; no path)
// and returns its canonical scheme://host[:port] form.
func NormalizeOrigin(origin string) (string, error) {
	o, err := weborigin.Normalize(origin)
	if err != nil {
		return "", fmt.Errorf("%q: %w", origin, ErrBadOrigin)
	}
	return o, nil
}

// Identity is the key's identity as internal calls carry it.
func (k Key) Identity() trust.Identity {
	return trust.Identity{KeyID: k.ID, Entitlements: k.Entitlements}
}

// Has reports whether the key carries an entitlement.
func (k Key) Has(entitlement string) bool { return slices.Contains(k.Entitlements, entitlement) }

// Errors. Authenticate's errors are deliberately coarse towards clients: the edge
// says "missing, unknown or revoked" without telling which secret part was wrong.
var (
	ErrNoKey        = errors.New("no developer key")
	ErrUnknownKey   = errors.New("unknown developer key")
	ErrRevokedKey   = errors.New("revoked developer key")
	ErrKeyNotFound  = errors.New("no developer key with that ID")
	ErrBadName      = errors.New("key name must be 1 to 100 characters")
	ErrEntitlement  = fmt.Errorf("unknown entitlement (known: %s)", strings.Join(knownEntitlements, ", "))
	ErrAlreadyGone  = errors.New("developer key already revoked")
	ErrBadOrigin    = weborigin.ErrBad
	ErrNoOrigin     = errors.New("a publishable key needs at least one origin")
	ErrBadLimit     = errors.New("a limit is a whole number of at least 1, or default")
	errMalformedKey = errors.New("malformed developer key")
)

// StoredKey is a key with its secret's hash, as a KeyStore keeps it.
type StoredKey struct {
	Key
	SecretHash string
}

// KeyStore persists keys. access/sqlstore implements it.
type KeyStore interface {
	InsertKey(ctx context.Context, k StoredKey) error
	KeyByID(ctx context.Context, id string) (StoredKey, error) // ErrKeyNotFound
	ListKeys(ctx context.Context) ([]Key, error)
	// RegisteredOrigins returns the origins of every live publishable key
	// (repeats included).
	RegisteredOrigins(ctx context.Context) ([]string, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error          // ErrKeyNotFound, ErrAlreadyGone
	SetKeyLimits(ctx context.Context, id string, l Limits) error           // ErrKeyNotFound
	SetTrustedDocumentsOnly(ctx context.Context, id string, on bool) error // ErrKeyNotFound
	Ping(ctx context.Context) error
}

// Service issues and checks developer keys.
type Service struct {
	store KeyStore
	now   func() time.Time
	ttl   time.Duration

	mu           sync.Mutex
	cache        map[[32]byte]cached
	origins      map[string]bool
	originsUntil time.Time
	// refreshing lets one preflight at a time read the origins anew; the
	// others wait for its answer rather than each reading them.
	refreshing singleflight.Group
}

type cached struct {
	key     Key
	err     error
	expires time.Time
}

// CacheTTL bounds how stale a replica's view of a key can be: a revoked key stops
// working everywhere within it (the contract promises one second).
const CacheTTL = 500 * time.Millisecond

// NewService returns a service over store. now is the clock (nil: time.Now).
func NewService(store KeyStore, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now, ttl: CacheTTL, cache: map[[32]byte]cached{}}
}

// OriginRegistered reports whether some live publishable key lists origin: the
// CORS preflight's question, asked before any key is sent. The answer is
// cached for CacheTTL.
func (s *Service) OriginRegistered(ctx context.Context, origin string) (bool, error) {
	o, err := NormalizeOrigin(origin)
	if err != nil {
		return false, nil
	}
	fresh := func() (map[string]bool, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.origins, s.origins != nil && s.now().Before(s.originsUntil)
	}
	if set, ok := fresh(); ok {
		return set[o], nil
	}
	// The read is shared by every preflight that comes while it runs, so it
	// is not cancelled with the request that started it; it is bounded by
	// originsRead instead, and each preflight waits only as long as its own
	// request may.
	read := s.refreshing.DoChan("origins", func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), originsRead)
		defer cancel()
		now := s.now()
		origins, err := s.store.RegisteredOrigins(rctx)
		if err != nil {
			return nil, err
		}
		set := make(map[string]bool, len(origins))
		for _, ko := range origins {
			set[ko] = true
		}
		s.mu.Lock()
		s.origins, s.originsUntil = set, now.Add(s.ttl)
		s.mu.Unlock()
		return set, nil
	})
	select {
	case r := <-read:
		if r.Err != nil {
			return false, r.Err
		}
		return r.Val.(map[string]bool)[o], nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// originsRead bounds a read of the registered origins.
const originsRead = 5 * time.Second

// Ping checks the key store, for /health.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// The plain key is "vk_" + the ID's body + "_" + a 43-character secret; the ID part
// lets the lookup use the primary key, the secret is what is hashed.
const (
	keyPrefix         = "vk_"
	publishablePrefix = "vpk_" // a publishable key looks different: it is meant to be seen
)

// CreatePublishableKey makes a key for websites at origins: it reads only public
// routes and never carries an entitlement.
func (s *Service) CreatePublishableKey(ctx context.Context, name string, origins []string) (Key, string, error) {
	if len(origins) == 0 {
		return Key{}, "", ErrNoOrigin
	}
	var norm []string
	for _, o := range origins {
		n, err := NormalizeOrigin(o)
		if err != nil {
			return Key{}, "", err
		}
		if !slices.Contains(norm, n) {
			norm = append(norm, n)
		}
	}
	return s.create(ctx, name, nil, norm)
}

// CreateKey makes a key and returns it with the plain key, which is never stored.
func (s *Service) CreateKey(ctx context.Context, name string, entitlements []string) (Key, string, error) {
	return s.create(ctx, name, entitlements, nil)
}

func (s *Service) create(ctx context.Context, name string, entitlements, origins []string) (Key, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 100 {
		return Key{}, "", ErrBadName
	}
	ents := []string{}
	for _, e := range entitlements {
		if !slices.Contains(knownEntitlements, e) {
			return Key{}, "", fmt.Errorf("%q: %w", e, ErrEntitlement)
		}
		if !slices.Contains(ents, e) {
			ents = append(ents, e)
		}
	}
	id := ids.New(ids.Key)
	plainSecret := secret.Base62(secretLen)
	k := Key{ID: id, Name: name, Entitlements: ents, Publishable: origins != nil, Origins: origins, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if err := s.store.InsertKey(ctx, StoredKey{Key: k, SecretHash: secret.Hash(plainSecret)}); err != nil {
		return Key{}, "", fmt.Errorf("store key: %w", err)
	}
	prefix := keyPrefix
	if k.Publishable {
		prefix = publishablePrefix
	}
	return k, prefix + strings.TrimPrefix(id, ids.Key+"_") + "_" + plainSecret, nil
}

// ListKeys returns every key, oldest first.
func (s *Service) ListKeys(ctx context.Context) ([]Key, error) { return s.store.ListKeys(ctx) }

// RevokeKey revokes a key by its ID or by the plain key itself.
func (s *Service) RevokeKey(ctx context.Context, idOrKey string) error {
	id, err := KeyID(idOrKey)
	if err != nil {
		return err
	}
	return s.store.RevokeKey(ctx, id, s.now().UTC())
}

// SetKeyLimits sets the quotas of a key named by its ID or by the key itself;
// a zero field goes back to the default. Replicas apply it within CacheTTL.
func (s *Service) SetKeyLimits(ctx context.Context, idOrKey string, l Limits) error {
	if l.RPS < 0 || l.CostPerMinute < 0 {
		return ErrBadLimit
	}
	id, err := KeyID(idOrKey)
	if err != nil {
		return err
	}
	return s.store.SetKeyLimits(ctx, id, l)
}

// FindKey returns the key an admin command names by its ID (key_…) or by the
// key itself, which must then be the live key (its secret is checked).
func (s *Service) FindKey(ctx context.Context, idOrKey string) (Key, error) {
	if strings.HasPrefix(idOrKey, keyPrefix) || strings.HasPrefix(idOrKey, publishablePrefix) {
		return s.Authenticate(ctx, idOrKey)
	}
	sk, err := s.store.KeyByID(ctx, idOrKey)
	if err != nil {
		return Key{}, err
	}
	return sk.Key, nil
}

// KeyID is the ID of a key named by its ID or by the key itself: what a
// command prints back, never the key.
func KeyID(idOrKey string) (string, error) {
	if strings.HasPrefix(idOrKey, keyPrefix) || strings.HasPrefix(idOrKey, publishablePrefix) {
		id, _, err := parseKey(idOrKey)
		return id, err
	}
	return idOrKey, nil
}

// Authenticate returns the live key a client presented.
func (s *Service) Authenticate(ctx context.Context, plain string) (Key, error) {
	if plain == "" {
		return Key{}, ErrNoKey
	}
	ck := sha256.Sum256([]byte(plain))
	now := s.now()
	s.mu.Lock()
	if c, ok := s.cache[ck]; ok && now.Before(c.expires) {
		s.mu.Unlock()
		return c.key, c.err
	}
	s.mu.Unlock()

	k, err := s.lookup(ctx, plain)
	if err != nil && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrRevokedKey) {
		return Key{}, err // a store failure is not cached
	}
	s.mu.Lock()
	if len(s.cache) > 100000 { // bound memory against floods of random keys
		clear(s.cache)
	}
	s.cache[ck] = cached{key: k, err: err, expires: now.Add(s.ttl)}
	s.mu.Unlock()
	return k, err
}

func (s *Service) lookup(ctx context.Context, plain string) (Key, error) {
	id, presented, err := parseKey(plain)
	if err != nil {
		return Key{}, ErrUnknownKey
	}
	sk, err := s.store.KeyByID(ctx, id)
	if errors.Is(err, ErrKeyNotFound) {
		return Key{}, ErrUnknownKey
	}
	if err != nil {
		return Key{}, fmt.Errorf("look up key: %w", err)
	}
	got := secret.Hash(presented)
	if subtle.ConstantTimeCompare([]byte(got), []byte(sk.SecretHash)) != 1 {
		return Key{}, ErrUnknownKey
	}
	if sk.RevokedAt != nil {
		return Key{}, ErrRevokedKey
	}
	if sk.Publishable != strings.HasPrefix(plain, publishablePrefix) {
		return Key{}, ErrUnknownKey // a key's prefix is part of it
	}
	return sk.Key, nil
}

func parseKey(plain string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(plain, keyPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(plain, publishablePrefix); !ok {
			return "", "", errMalformedKey
		}
	}
	body, secret, ok := strings.Cut(rest, "_")
	id = ids.Key + "_" + body
	if !ok || !ids.Valid(id, ids.Key) || len(secret) != secretLen {
		return "", "", errMalformedKey
	}
	return id, secret, nil
}

const secretLen = 43 // 256 bits in unpadded base64url-sized base62

// Header is where clients send their developer key.
const Header = "x-service-key"

// Refusal explains an Authenticate error to a client: the HTTP status and a
// message that says how to fix it. A store failure is a 503 without detail.
func Refusal(err error) (status int, message string) {
	switch {
	case errors.Is(err, ErrNoKey):
		return 401, "missing x-service-key header: create a key with `vitola keys create --name NAME`"
	case errors.Is(err, ErrRevokedKey):
		return 401, "this developer key has been revoked: create a new one"
	case errors.Is(err, ErrUnknownKey):
		return 401, "unknown developer key: check the x-service-key header"
	default:
		return 503, "the key store is unavailable; try again shortly"
	}
}
