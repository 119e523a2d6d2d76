package payments

import (
	"context"
	"time"

	"github.com/vitolahq/vitola/internal/envelope"
)

// Session is a hosted payment session: a client created it for one account
// and one offer; a browser redeems its one-time token and pays.
type Session struct {
	ID         string
	ClientID   string
	AccountID  string
	OfferID    string
	PurchaseID string
	// TokenHash is the one-time token's hash; the token is shown once.
	TokenHash    string
	ReturnURL    string
	CancelURL    string
	ParentOrigin string
	State        string
	ExpiresAt    time.Time
	CreatedAt    time.Time
	RedeemedAt   *time.Time
	ClosedAt     *time.Time
}

// Session states. A session is open until redeemed, active while the browser
// pays, and ends completed, cancelled or expired.
const (
	SessionOpen      = "open"
	SessionActive    = "active"
	SessionCompleted = "completed"
	SessionCancelled = "cancelled"
	SessionExpired   = "expired"
)

// Session lifetimes: a session lives DefaultSessionTTL unless its creator asks
// for another lifetime from MinSessionTTL to MaxSessionTTL.
const (
	DefaultSessionTTL = 30 * time.Minute
	MinSessionTTL     = time.Minute
	MaxSessionTTL     = 24 * time.Hour
)

// StateAt is the session's state at now: an open or active session past its
// expiry is expired even before the sweeper writes it.
func (s *Session) StateAt(now time.Time) string {
	if (s.State == SessionOpen || s.State == SessionActive) && !now.Before(s.ExpiresAt) {
		return SessionExpired
	}
	return s.State
}

// Purchase is a payment for an offer: made by a hosted session (a checkout)
// or by an auto-reload rule (a reload). Until it is confirmed it is the
// session's purchase intent; the ID stays the same.
type Purchase struct {
	ID              string
	Kind            string
	ClientID        string
	AccountID       string
	OfferID         string
	SessionID       string
	ResourceType    string
	Quantity        int64
	Amount          int64
	Currency        string
	MerchantID      string
	PaymentMethodID string
	State           string
	ChargeID        string
	// AttemptKey is the gateway idempotency key of the current attempt.
	AttemptKey     string
	Attempts       int
	FailureCode    string
	FailureMessage string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Purchase kinds.
const (
	PurchaseCheckout = "checkout"
	PurchaseReload   = "reload"
)

// Purchase states.
const (
	// PurchaseOpen: not paid yet (a checkout awaiting confirmation, or after a
	// declined card, which the buyer may retry with another).
	PurchaseOpen = "open"
	// PurchaseQueued: a reload waiting for the reloader.
	PurchaseQueued = "queued"
	// PurchaseProcessing: a charge is under way.
	PurchaseProcessing = "processing"
	// PurchasePending: the gateway did not say whether it charged; the
	// reconciler finds out, never charging twice.
	PurchasePending   = "pending"
	PurchaseSucceeded = "succeeded"
	PurchaseFailed    = "failed"
	PurchaseCancelled = "cancelled"
	PurchaseRefunded  = "refunded"
)

// PaymentMethod is a card saved in a gateway's vault for an account.
type PaymentMethod struct {
	ID         string
	AccountID  string
	MerchantID string
	// Vault is the gateway's reference, sealed at rest; never returned.
	Vault     envelope.Sealed
	Brand     string
	Last4     string
	ExpMonth  int
	ExpYear   int
	Default   bool
	CreatedAt time.Time
}

// AutoReload buys an offer for an account when a debit takes its balance of
// the offer's resource type below Threshold.
type AutoReload struct {
	AccountID string
	// ClientID configured it: its reloads are that client's purchases.
	ClientID        string
	Enabled         bool
	Threshold       int64
	OfferID         string
	PaymentMethodID string
	// Failures counts reloads that failed in a row; at MaxReloadFailures the
	// rule turns itself off (DisabledReason says why) until configured again.
	Failures       int
	DisabledReason string
	UpdatedAt      time.Time
}

// MaxReloadFailures: consecutive failed reloads before a rule turns off.
const MaxReloadFailures = 3

// NewSession is what a client asks for.
type NewSession struct {
	AccountID    string
	OfferID      string
	ReturnURL    string
	CancelURL    string
	ParentOrigin string
	// TTL is the session's lifetime (0: DefaultSessionTTL).
	TTL time.Duration
	// Key names the create (nil: none, as in tests and demo data).
	Key *SessionKey
}

// SessionKey is a create's Idempotency-Key with its request's hash: a
// client's key creates one session, and a retry with the same key and request
// gets that create's answer again.
type SessionKey struct {
	Key         string
	RequestHash string
}

// SessionKeyRetention is how long a create's key is kept.
const SessionKeyRetention = 24 * time.Hour

// KeptCreate is what a client's key holds: the answer of the create that
// used it first.
type KeptCreate struct {
	ClientID    string
	Key         string
	RequestHash string
	SessionID   string
	// Token is the hosted URL's one-time token, kept until the key expires
	// so that a retry gets the URL the first answer had.
	Token string
	// Document is the session as the create answered it.
	Document  Document
	ExpiresAt time.Time
}

// CreatedSession is a create's answer.
type CreatedSession struct {
	// Session and Purchase are what was created; nil on a replay.
	Session  *Session
	Purchase *Purchase
	Token    string
	// Document is the session as the payments API shows it.
	Document Document
	// Replayed: an earlier create with the same key made the session; this
	// is its answer, as it was.
	Replayed bool
}

// Sessions keeps sessions, purchases, payment methods and reload rules.
type Sessions interface {
	// CreateSession stores a session with its purchase intent and, unless
	// kept is nil, its create's key, in one transaction. When a live key of
	// the client holds an earlier create, nothing is written and that
	// create is returned.
	CreateSession(ctx context.Context, s *Session, p *Purchase, kept *KeptCreate) (earlier *KeptCreate, err error)
	// KeptCreate is the create a client's key holds until its expiry
	// (ErrNotFound when none).
	KeptCreate(ctx context.Context, clientID, key string, now time.Time) (*KeptCreate, error)
	// ForgetKeptCreates removes the keys that expired before now.
	ForgetKeptCreates(ctx context.Context, now time.Time) (int, error)
	Session(ctx context.Context, id string) (*Session, error)
	Purchase(ctx context.Context, id string) (*Purchase, error)
	// SessionWithPurchase reads a session and its purchase at once.
	SessionWithPurchase(ctx context.Context, id string) (*Session, *Purchase, error)
	// SessionParts reads at once what a new session is checked against: an
	// account, without its balances (Balances is empty), and an offer with
	// its merchant account. What does not exist is nil.
	SessionParts(ctx context.Context, accountID, offerID string) (*Account, *Offer, *MerchantAccount, error)
	// ExpireSessions marks open and active sessions past their expiry as
	// expired (and their open purchases cancelled); it returns how many.
	ExpireSessions(ctx context.Context, now time.Time) (int, error)

	// RedeemSession makes the open, unexpired session with this token hash
	// (and this ID, unless sessionID is empty) active, once, or fails with
	// ErrNotFound.
	RedeemSession(ctx context.Context, tokenHash, sessionID string, now time.Time) (*Session, error)
	// CancelSession cancels an active session and its open purchase.
	CancelSession(ctx context.Context, id string, now time.Time) error

	// AddPaymentMethod saves a method; the account's first one, or one made
	// default, becomes its only default.
	AddPaymentMethod(ctx context.Context, pm *PaymentMethod) error
	PaymentMethod(ctx context.Context, accountID, id string) (*PaymentMethod, error)
	// PaymentMethods lists an account's saved methods, the default first.
	PaymentMethods(ctx context.Context, accountID string) ([]PaymentMethod, error)
	SetDefaultMethod(ctx context.Context, accountID, id string) error
	// DeleteMethod removes a method and erases its vault reference.
	DeleteMethod(ctx context.Context, accountID, id string, now time.Time) error

	SetAutoReload(ctx context.Context, r *AutoReload) error
	AutoReload(ctx context.Context, accountID string) (*AutoReload, error)

	// ClaimPurchases takes up to limit purchases for the background worker,
	// leased until leaseUntil: queued reloads (a new attempt, with a new
	// gateway key) and purchases whose charge is pending or whose worker died
	// (the same attempt again, with the same key, so the gateway never
	// charges twice), within ReconcileWindow of the attempt's start. Several
	// replicas never take the same purchase.
	ClaimPurchases(ctx context.Context, now, leaseUntil time.Time, limit int) ([]Purchase, error)
	// CompletePurchase records a captured charge of the attempt attemptKey,
	// in one transaction: the purchase succeeds, the account is credited,
	// the session completes, a reload rule's failures reset. It reports false
	// when the attempt was finished already.
	CompletePurchase(ctx context.Context, id, attemptKey, chargeID string) (bool, error)
	// FailPurchase records a declined attempt: a checkout is open again for
	// another card; a reload fails and counts against its rule (which turns
	// off at MaxReloadFailures, and otherwise waits retryAfter before the
	// next reload).
	FailPurchase(ctx context.Context, id, attemptKey, code, message string, retryAfter time.Time) (bool, error)
	// ClaimCheckout starts an attempt at an open checkout with a payment
	// method, under a new gateway key, leased until leaseUntil; a purchase
	// being paid or closed is ErrConflict.
	ClaimCheckout(ctx context.Context, purchaseID, paymentMethodID string, leaseUntil time.Time) (*Purchase, error)
	// RefundPurchase takes a succeeded purchase's units back from its account
	// (ErrInsufficientCredits when they were spent; nothing changes then).
	RefundPurchase(ctx context.Context, id, note string) error
	// MarkPending records an attempt whose outcome is unknown; the worker
	// asks the gateway again from retryAt.
	MarkPending(ctx context.Context, id, attemptKey string, retryAt time.Time) error
}
