// Package callback verifies Vitola's signed fulfillment callbacks, for the
// systems that receive them. It is a public package: other modules import it as
// github.com/vitolahq/vitola/sdk/callback. It uses the standard library only.
//
// A callback is an HTTP POST whose JSON body {"id", "type", "createdAt", "data"}
// is signed as sent:
//
//	X-Service-Timestamp: <Unix seconds>
//	X-Service-Signature: v1=<lowercase hex of HMAC-SHA256(secret, timestamp + "." + raw body)>
//
// with one v1 value per live signing secret while a secret rotates
// ("v1=<hex>,v1=<hex>"). Verify checks the two headers, the clock and the
// signature over the raw bytes before it parses the body. The receiver then
// records the event, deduplicated on its ID, in the same database transaction
// as the fulfillment, and answers 2xx only after that commit: any other status
// makes Vitola retry (for up to 3 days), and 410 turns the endpoint's callbacks
// off. Handler does the verifying part for a net/http server; see its example.
package callback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a callback.
const (
	HeaderTimestamp = "X-Service-Timestamp"
	HeaderSignature = "X-Service-Signature"
)

// DefaultTolerance is how far a callback's timestamp may be from the
// receiver's clock, in either direction, when Verifier.Tolerance is zero.
const DefaultTolerance = 300 * time.Second

// Event types. A receiver should acknowledge a type it does not know (2xx)
// rather than refuse it: Vitola may add types.
const (
	PurchaseSucceeded = "purchase.succeeded"
	PurchaseRefunded  = "purchase.refunded"
	ReloadSucceeded   = "reload.succeeded"
	ReloadFailed      = "reload.failed"
	SessionExpired    = "session.expired"
	SessionCancelled  = "session.cancelled"
)

// Event is a verified callback.
type Event struct {
	// ID identifies the event (fev_…): deduplicate on it. A retried or
	// replayed callback carries the same ID and body.
	ID        string
	Type      string
	CreatedAt time.Time
	// Data is the event's payload, a JSON object whose fields depend on Type.
	Data json.RawMessage
}

// Error codes, the same in the TypeScript SDK's verifyCallback.
const (
	CodeMissingTimestamp        = "missing_timestamp"          // no X-Service-Timestamp
	CodeMissingSignature        = "missing_signature"          // no X-Service-Signature
	CodeInvalidTimestamp        = "invalid_timestamp"          // not Unix seconds
	CodeTimestampOutOfTolerance = "timestamp_out_of_tolerance" // too old or too far ahead
	CodeNoMatchingSignature     = "no_matching_signature"      // no v1 value matches a secret
	CodeInvalidBody             = "invalid_body"               // signed, but not an event
	CodeMisconfigured           = "misconfigured"              // the receiver's own settings
	CodeBodyTooLarge            = "body_too_large"             // Handler only
)

// Error is why a callback was refused. Its message says what was wrong and
// never holds a secret or a signature.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "callback: " + e.Code
	}
	return "callback: " + e.Message
}

// Is matches the sentinel of the same code: errors.Is(err, ErrNoMatchingSignature).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Status is the HTTP status a receiver answers for the error: 401 for a
// callback that cannot be trusted, 400 for a signed body that is not an event,
// 413 for a body over the bound, 500 for the receiver's own misconfiguration.
func (e *Error) Status() int {
	switch e.Code {
	case CodeInvalidBody:
		return http.StatusBadRequest
	case CodeBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeMisconfigured:
		return http.StatusInternalServerError
	default:
		return http.StatusUnauthorized
	}
}

// Sentinels for errors.Is.
var (
	ErrMissingTimestamp        = &Error{Code: CodeMissingTimestamp}
	ErrMissingSignature        = &Error{Code: CodeMissingSignature}
	ErrInvalidTimestamp        = &Error{Code: CodeInvalidTimestamp}
	ErrTimestampOutOfTolerance = &Error{Code: CodeTimestampOutOfTolerance}
	ErrNoMatchingSignature     = &Error{Code: CodeNoMatchingSignature}
	ErrInvalidBody             = &Error{Code: CodeInvalidBody}
	ErrMisconfigured           = &Error{Code: CodeMisconfigured}
	ErrBodyTooLarge            = &Error{Code: CodeBodyTooLarge}
)

func fail(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Verifier verifies callbacks against one or more signing secrets.
type Verifier struct {
	// Secrets are the client's signing secrets (whsec_…), used whole as
	// their UTF-8 bytes. During a rotation, hold the old and the new one: a
	// callback is accepted when any of its v1 values matches any secret.
	Secrets []string
	// Tolerance bounds |now − timestamp| (zero: DefaultTolerance).
	Tolerance time.Duration
	// Now is the receiver's clock (nil: time.Now).
	Now func() time.Time
}

// Verify verifies a callback signed with secret, as received at now: its
// headers, then the signature over the raw body, then the body. It is
// Verifier{Secrets: []string{secret}}.Verify at a fixed time.
func Verify(secret string, header http.Header, body []byte, now time.Time) (*Event, error) {
	v := Verifier{Secrets: []string{secret}, Now: func() time.Time { return now }}
	return v.Verify(header, body)
}

// Verify verifies a callback's headers, then its signature over the raw body,
// then parses the body. Errors are *Error.
func (v Verifier) Verify(header http.Header, body []byte) (*Event, error) {
	sh, err := v.checkHeaders(header)
	if err != nil {
		return nil, err
	}
	return v.verifyBody(sh, body)
}

// signedHeaders are a callback's headers, read and checked before its body.
type signedHeaders struct {
	timestamp string   // as sent: the signed string begins with it
	v1        []string // the v1 values, unchecked
}

// checkHeaders reads both headers and checks the clock: everything that can
// be refused before the body is read.
func (v Verifier) checkHeaders(header http.Header) (signedHeaders, error) {
	if err := v.check(); err != nil {
		return signedHeaders{}, err
	}
	ts := values(header, HeaderTimestamp)
	if len(ts) == 0 {
		return signedHeaders{}, fail(CodeMissingTimestamp, "the %s header is missing: it must hold the Unix seconds at which Vitola signed the callback", HeaderTimestamp)
	}
	sigs := values(header, HeaderSignature)
	if len(sigs) == 0 {
		return signedHeaders{}, fail(CodeMissingSignature, "the %s header is missing: it must hold v1=<hex signature>", HeaderSignature)
	}
	if len(ts) > 1 {
		return signedHeaders{}, fail(CodeInvalidTimestamp, "the %s header was sent %d times; it must be sent once", HeaderTimestamp, len(ts))
	}
	sent, ok := unixSeconds(ts[0])
	if !ok {
		return signedHeaders{}, fail(CodeInvalidTimestamp, "the %s header is not a whole number of Unix seconds", HeaderTimestamp)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tolerance := v.tolerance()
	age := now().Unix() - sent
	switch {
	case float64(age) > tolerance.Seconds():
		return signedHeaders{}, fail(CodeTimestampOutOfTolerance, "the callback was signed %d s ago, more than the %g s allowed: a replayed callback, or this server's clock runs ahead (check NTP)", age, tolerance.Seconds())
	case float64(-age) > tolerance.Seconds():
		return signedHeaders{}, fail(CodeTimestampOutOfTolerance, "the callback is dated %d s in the future, more than the %g s allowed: this server's clock runs behind (check NTP)", -age, tolerance.Seconds())
	}
	return signedHeaders{timestamp: ts[0], v1: v1Values(sigs)}, nil
}

// verifyBody checks the signature over the raw body, then parses it.
func (v Verifier) verifyBody(sh signedHeaders, body []byte) (*Event, error) {
	if len(sh.v1) == 0 {
		return nil, fail(CodeNoMatchingSignature, "the %s header holds no v1= value", HeaderSignature)
	}
	matched := false
	for _, secret := range v.Secrets {
		want := []byte(signature(secret, sh.timestamp, body))
		for _, got := range sh.v1 {
			// hmac.Equal compares in constant time; lengths are not secret.
			if len(got) == len(want) && hmac.Equal([]byte(got), want) {
				matched = true
			}
		}
	}
	if !matched {
		return nil, fail(CodeNoMatchingSignature, "no v1 signature in %s matches a configured signing secret (%d v1 value(s), %d secret(s)): check the secret, and that the body is verified as the exact bytes received (lowercase hex expected)", HeaderSignature, len(sh.v1), len(v.Secrets))
	}
	return parse(body)
}

func (v Verifier) check() error {
	if len(v.Secrets) == 0 {
		return fail(CodeMisconfigured, "no signing secret is configured: set the client's whsec_… secret")
	}
	for i, s := range v.Secrets {
		if s == "" {
			return fail(CodeMisconfigured, "signing secret %d of %d is empty", i+1, len(v.Secrets))
		}
	}
	if v.Tolerance < 0 {
		return fail(CodeMisconfigured, "the tolerance is negative")
	}
	return nil
}

func (v Verifier) tolerance() time.Duration {
	if v.Tolerance == 0 {
		return DefaultTolerance
	}
	return v.Tolerance
}

// values are a header's non-empty values, its name matched without regard to
// case (a hand-built http.Header may not be canonical).
func values(header http.Header, name string) []string {
	var out []string
	for k, vs := range header {
		if !strings.EqualFold(k, name) {
			continue
		}
		for _, v := range vs {
			if v = strings.Trim(v, " \t"); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// unixSeconds parses decimal digits only: no sign, no fraction, no exponent.
func unixSeconds(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// v1Values are the v1 values of the signature header's lines, which are
// comma-separated "scheme=value" items. Other schemes are ignored.
func v1Values(lines []string) []string {
	var out []string
	for _, line := range lines {
		for item := range strings.SplitSeq(line, ",") {
			scheme, value, ok := strings.Cut(strings.Trim(item, " \t"), "=")
			if ok && scheme == "v1" {
				out = append(out, value)
			}
		}
	}
	return out
}

// parse reads a verified body. Member names match exactly, as in JavaScript
// (encoding/json alone would also take "ID" for "id").
func parse(body []byte) (*Event, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return nil, fail(CodeInvalidBody, "the signature is valid but the body is not a JSON object")
	}
	var e Event
	var created string
	for _, f := range []struct {
		name string
		to   *string
	}{{"id", &e.ID}, {"type", &e.Type}, {"createdAt", &created}} {
		raw, ok := members[f.name]
		if !ok || json.Unmarshal(raw, f.to) != nil || *f.to == "" {
			return nil, fail(CodeInvalidBody, "the signature is valid but the body's %q is not a non-empty string", f.name)
		}
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return nil, fail(CodeInvalidBody, "the signature is valid but the body's \"createdAt\" is not an RFC 3339 date-time")
	}
	e.CreatedAt = t
	e.Data = members["data"]
	if len(e.Data) == 0 || e.Data[0] != '{' {
		return nil, fail(CodeInvalidBody, "the signature is valid but the body's \"data\" is not a JSON object")
	}
	return &e, nil
}

// Sign returns the X-Service-Signature value ("v1=<hex>") of body sent at ts,
// signed with secret, for tests of a receiver; X-Service-Timestamp is then
// strconv.FormatInt(ts.Unix(), 10). For a rotation, join the values of both
// secrets with a comma.
func Sign(secret string, body []byte, ts time.Time) string {
	return "v1=" + signature(secret, strconv.FormatInt(ts.Unix(), 10), body)
}

// signature is the lowercase hex HMAC-SHA256 of timestamp + "." + body.
func signature(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
