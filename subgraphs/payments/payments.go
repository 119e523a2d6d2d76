// Package payments is the payments subgraph's domain: billing accounts and their
// double-entry credit ledger, the service clients (trusted backends) that sell
// to them, resource types and offers, merchant accounts with their gateway
// credentials, hosted payment sessions, purchases, payment methods, and the
// gateways that move money.
//
// The ledger is double-entry: every transaction is a set of postings that sum
// to zero, between an account's books (available and held credits of a
// resource type) and the platform's books (credits granted, sold, consumed).
// An account's balance is the sum of its postings; paid requests hold credits
// before they work, settle the actual cost after, and release the hold when
// they fail, so a failure never costs anything and two requests cannot spend
// the same credit.
//
// Domain types and errors live here; sqlstore keeps them in SQL, gateway holds
// the gateways, graph is the internal GraphQL API the shim calls.
package payments

import (
	"errors"
	"fmt"
)

// AICredits is the built-in resource type: the credits identify and
// fingerprint spend.
const AICredits = "ai_credits"

// Errors shared by the whole domain. Each is a client's mistake with a stable
// code (graph maps them); anything else is the platform's failure.
var (
	ErrNotFound = errors.New("not found")
	// ErrInvalid wraps a validation failure whose message names the field.
	ErrInvalid = errors.New("invalid input")
	// ErrConflict: the state forbids the move (a closed session, a used token).
	ErrConflict = errors.New("conflict")
)

// Invalid returns an ErrInvalid naming what was wrong and how to fix it.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// CodedError is a refusal with a stable code of the payments API (the REST
// error code, in upper case on the internal GraphQL API).
type CodedError struct {
	Code    string
	Message string
}

func (e *CodedError) Error() string { return e.Message }

// Refusal codes of the payments API. The shim maps each to its HTTP status.
const (
	CodeActionNotAllowed     = "action_not_allowed"
	CodeAssertionRequired    = "billing_account_assertion_required"
	CodeReturnNotAllowed     = "return_not_allowed"
	CodeOriginNotAllowed     = "origin_not_allowed"
	CodeMerchantNotFound     = "merchant_account_not_found"
	CodeMerchantNotReady     = "merchant_not_ready"
	CodeSessionUnavailable   = "session_unavailable"
	CodeOfferNotFound        = "offer_not_found"
	CodeAccountNotFound      = "billing_account_not_found"
	CodeSessionNotFound      = "payment_session_not_found"
	CodePaymentMethodMissing = "payment_method_not_found"
	CodeResourceTypeUnknown  = "resource_type_not_found"
	CodeInvalidRequest       = "invalid_request"
	// CodeKeyReused: a create's Idempotency-Key was used with another request.
	CodeKeyReused = "idempotency_key_reused"
	// CodeClientNotActive: the call's client was revoked (or removed) after
	// the shim verified its secret, which the shim reuses for a moment; the
	// shim answers it as the one 401 of every bad credential.
	CodeClientNotActive = "client_not_active"
)

// Refuse returns a CodedError.
func Refuse(code, format string, args ...any) error {
	return &CodedError{Code: code, Message: fmt.Sprintf(format, args...)}
}
