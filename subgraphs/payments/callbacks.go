package payments

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vitolahq/vitola/internal/envelope"
	"github.com/vitolahq/vitola/internal/faults"
	"github.com/vitolahq/vitola/internal/secret"
	"github.com/vitolahq/vitola/internal/timestamp"
)

// Fulfillment callbacks. Every event is written to the outbox in the same
// database transaction as the state change that causes it, and a sender
// delivers it to the client's callback URL, signed:
//
//	X-Service-Timestamp: <Unix seconds>
//	X-Service-Signature: v1=<lowercase hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// with one v1 value per live signing secret (two during a rotation). A 2xx
// acknowledges; anything else (3xx included) or no answer within the timeout
// is retried with exponential backoff and full jitter, re-signed with a fresh
// timestamp each time, until the event is MaxEventAge old; a 410 turns the
// client's callbacks off. Every attempt is recorded.

// Event types.
const (
	EventPurchaseSucceeded = "purchase.succeeded"
	EventPurchaseRefunded  = "purchase.refunded"
	EventReloadSucceeded   = "reload.succeeded"
	EventReloadFailed      = "reload.failed"
	EventSessionExpired    = "session.expired"
	EventSessionCancelled  = "session.cancelled"
)

// Event delivery states.
const (
	EventPending   = "pending"
	EventDelivered = "delivered"
	// EventFailed: retried until MaxEventAge without an acknowledgement.
	EventFailed = "failed"
)

// CallbackEvent is one event in the outbox.
type CallbackEvent struct {
	ID        string
	ClientID  string
	Type      string
	SubjectID string
	// Body is the JSON sent, fixed when the event was written:
	// {"id", "type", "createdAt", "data"}.
	Body          []byte
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	CreatedAt     time.Time
	DeliveredAt   *time.Time
}

// CallbackAttempt is one delivery attempt.
type CallbackAttempt struct {
	EventID   string
	Attempt   int
	StartedAt time.Time
	Duration  time.Duration
	// Status is the receiver's HTTP status, 0 when it did not answer.
	Status int
	Error  string
}

// AttemptOutcome is what an attempt leads to.
type AttemptOutcome struct {
	State string
	// RetryAt is when a pending event is tried again.
	RetryAt time.Time
	// DisableClient: the receiver answered 410.
	DisableClient bool
}

// Callbacks keeps the outbox.
type Callbacks interface {
	// ClaimEvents takes up to limit due events of clients whose callbacks
	// are on, leased to holder until leaseUntil. Several replicas never take
	// one event at once.
	ClaimEvents(ctx context.Context, holder string, now, leaseUntil time.Time, limit int) ([]CallbackEvent, error)
	// FinishAttempt records an attempt and its outcome.
	FinishAttempt(ctx context.Context, a CallbackAttempt, o AttemptOutcome) error
	Event(ctx context.Context, id string) (*CallbackEvent, error)
	// Events lists events, newest first ("" matches any client or state).
	Events(ctx context.Context, clientID, state string, limit int) ([]CallbackEvent, error)
	Attempts(ctx context.Context, eventID string) ([]CallbackAttempt, error)
	// RetryEvent makes a pending or failed event due now.
	RetryEvent(ctx context.Context, id string, now time.Time) error
	// ReplayEvent sends an event again, delivered or not (same ID and body).
	ReplayEvent(ctx context.Context, id string, now time.Time) error
	// SetCallbacksOn turns a client's callbacks on or off.
	SetCallbacksOn(ctx context.Context, clientID string, on bool, at time.Time) error
	// SetSigningSecret installs a sealed signing secret; the current one is
	// kept as the previous until previousUntil (zero: dropped).
	SetSigningSecret(ctx context.Context, clientID string, sealed envelope.Sealed, previousUntil time.Time) error
}

// MaxEventAge is how long an event is retried by default.
const MaxEventAge = 72 * time.Hour

// SigningGrace is how long a rotated-out signing secret still signs (its
// signature is sent beside the new one's).
const SigningGrace = 24 * time.Hour

// SigningSecretPrefix begins every signing secret.
const SigningSecretPrefix = "whsec_"

// signingAAD binds a sealed signing secret to its client.
func signingAAD(clientID string) string { return clientID + "/signing" }

// NewSigningSecret makes a signing secret: 256 bits, base62.
func NewSigningSecret() string { return SigningSecretPrefix + secret.Base62(43) }

// RotateSigningSecret gives a client a new signing secret, shown once; the
// old one signs beside it for SigningGrace.
func (s *Service) RotateSigningSecret(ctx context.Context, clientID string) (string, time.Time, error) {
	c, err := s.Store.Client(ctx, clientID)
	if err != nil {
		return "", time.Time{}, err
	}
	if c.RevokedAt != nil {
		return "", time.Time{}, fmt.Errorf("%w: client %s is revoked", ErrConflict, clientID)
	}
	plain := NewSigningSecret()
	sealed, err := s.Keys.Seal([]byte(plain), signingAAD(clientID))
	if err != nil {
		return "", time.Time{}, err
	}
	until := s.now().Add(SigningGrace).UTC().Truncate(time.Millisecond)
	if err := s.Store.SetSigningSecret(ctx, clientID, sealed, until); err != nil {
		return "", time.Time{}, err
	}
	return plain, until, nil
}

// signingSecrets opens a client's live signing secrets, the current first.
func (s *Service) signingSecrets(c *Client, now time.Time) ([]string, error) {
	var out []string
	if c.Signing != nil {
		b, err := s.Keys.Open(*c.Signing, signingAAD(c.ID))
		if err != nil {
			return nil, fmt.Errorf("open signing secret of %s: %w", c.ID, err)
		}
		out = append(out, string(b))
	}
	if c.PreviousSigning != nil && c.PreviousSigningExpiresAt != nil && now.Before(*c.PreviousSigningExpiresAt) {
		b, err := s.Keys.Open(*c.PreviousSigning, signingAAD(c.ID))
		if err != nil {
			return nil, fmt.Errorf("open previous signing secret of %s: %w", c.ID, err)
		}
		out = append(out, string(b))
	}
	return out, nil
}

// Signature is the X-Service-Signature value for a body sent at ts: one
// v1= value per secret.
func Signature(secrets []string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	vs := make([]string, len(secrets))
	for i, sec := range secrets {
		m := hmac.New(sha256.New, []byte(sec))
		m.Write([]byte(t))
		m.Write([]byte{'.'})
		m.Write(body)
		vs[i] = "v1=" + hex.EncodeToString(m.Sum(nil))
	}
	return strings.Join(vs, ",")
}

// Sender delivers the outbox.
type Sender struct {
	Service *Service
	// HTTP sends callbacks; it must not follow redirects (a 3xx is a
	// failure) and bounds each attempt (Timeout).
	HTTP    *http.Client
	Timeout time.Duration
	// MaxAge ends retries (default MaxEventAge).
	MaxAge time.Duration
	// Holder names this process in leases.
	Holder string
}

// CallbackTimeout is an attempt's default bound.
const CallbackTimeout = 15 * time.Second

// NewSender returns a sender with its own HTTP client.
func NewSender(svc *Service, timeout, maxAge time.Duration) *Sender {
	if timeout <= 0 {
		timeout = CallbackTimeout
	}
	if maxAge <= 0 {
		maxAge = MaxEventAge
	}
	client := &http.Client{
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: timeout}).DialContext, MaxIdleConnsPerHost: 8,
			ResponseHeaderTimeout: timeout},
	}
	return &Sender{Service: svc, HTTP: client, Timeout: timeout, MaxAge: maxAge, Holder: "sender-" + secret.Base62(12)}
}

// retryDelay is the full-jitter exponential backoff after attempt n
// (1-based): a random delay up to min(6 h, 10 s × 2^(n−1)).
func retryDelay(n int) time.Duration {
	ceiling := min(6*time.Hour, 10*time.Second<<min(n-1, 20))
	return time.Duration(rand.Int64N(int64(ceiling))) + time.Second
}

// RunOnce delivers the due events it can claim; it returns how many it
// attempted. Every replica may run it.
func (s *Sender) RunOnce(ctx context.Context) (int, error) {
	now := s.Service.now()
	events, err := s.Service.Store.ClaimEvents(ctx, s.Holder, now, now.Add(s.Timeout+time.Minute), 20)
	if err != nil {
		return 0, err
	}
	for i := range events {
		if err := s.deliver(ctx, &events[i]); err != nil {
			return i, err
		}
	}
	return len(events), nil
}

// deliver makes one attempt at an event and records it.
func (s *Sender) deliver(ctx context.Context, e *CallbackEvent) error {
	c, err := s.Service.Store.Client(ctx, e.ClientID)
	if err != nil {
		return err
	}
	start := s.Service.now()
	a := CallbackAttempt{EventID: e.ID, Attempt: e.Attempts + 1, StartedAt: start}
	secrets, err := s.Service.signingSecrets(c, start)
	if err == nil && (len(secrets) == 0 || c.CallbackURL == "") {
		err = errors.New("the client has no callback URL or signing secret")
	}
	if err == nil {
		a.Status, err = s.post(ctx, c.CallbackURL, secrets, e.Body, start)
	}
	a.Duration = s.Service.now().Sub(start)
	faults.Point("payments.callback-sent")
	o := AttemptOutcome{State: EventPending}
	switch {
	case err == nil && a.Status >= 200 && a.Status < 300:
		o.State = EventDelivered
	case err == nil && a.Status == http.StatusGone:
		o.DisableClient = true
		a.Error = "the receiver answered 410 Gone: callbacks to this client are off until turned on again"
	default:
		if err != nil {
			a.Error = err.Error()
		} else {
			a.Error = fmt.Sprintf("the receiver answered %d", a.Status)
		}
		if s.Service.now().Sub(e.CreatedAt) >= s.MaxAge {
			o.State = EventFailed
		} else {
			o.RetryAt = s.Service.now().Add(retryDelay(a.Attempt))
		}
	}
	return s.Service.Store.FinishAttempt(ctx, a, o)
}

// post sends one signed attempt and returns the status.
func (s *Sender) post(ctx context.Context, url string, secrets []string, body []byte, ts time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, errors.New("the callback URL is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Vitola-Callbacks/1")
	req.Header.Set("X-Service-Timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("X-Service-Signature", Signature(secrets, ts, body))
	res, err := s.HTTP.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Timeout") {
			return 0, fmt.Errorf("no answer within %s", s.Timeout)
		}
		return 0, errors.New("the receiver could not be reached")
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

// EventBody builds an event's JSON body.
func EventBody(id, typ string, createdAt time.Time, data []byte) []byte {
	return []byte(`{"id":"` + id + `","type":"` + typ + `","createdAt":"` + timestamp.Format(createdAt) + `","data":` + string(data) + "}")
}
