package restshim

import (
	"errors"
	"net/http"
	"strings"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// refusalStatus is the one table from a subgraph's refusals to HTTP: each
// refusal is a GraphQL error whose extensions.code, in lower case, is the
// REST error code, and this is its status. The subgraph that owns the data
// decides on the refusal and words its message; the shim only knows how
// HTTP says it. A code missing here (and not INVALID_<WHAT>, always a 400)
// is the platform's failure: a 502, logged.
var refusalStatus = map[string]int{
	// matching: the image intake and the matching rules
	"invalid_image_urls":       http.StatusBadRequest,
	"invalid_image_url":        http.StatusBadRequest,
	"invalid_prompt":           http.StatusBadRequest,
	"invalid_suggestion_limit": http.StatusBadRequest,
	"invalid_research_mode":    http.StatusBadRequest,
	"invalid_research_profile": http.StatusBadRequest,
	"invalid_limit":            http.StatusBadRequest,
	"invalid_fingerprint":      http.StatusBadRequest,
	"image_address_blocked":    http.StatusUnprocessableEntity,
	"too_many_redirects":       http.StatusUnprocessableEntity,
	"image_redirect_refused":   http.StatusUnprocessableEntity,
	"image_fetch_timeout":      http.StatusUnprocessableEntity,
	"image_fetch_failed":       http.StatusUnprocessableEntity,
	"image_fetch_canceled":     http.StatusUnprocessableEntity,
	"image_too_large":          http.StatusUnprocessableEntity,
	"unsupported_image_type":   http.StatusUnprocessableEntity,
	"image_too_many_pixels":    http.StatusUnprocessableEntity,
	"invalid_image":            http.StatusUnprocessableEntity,
	"no_band_found":            http.StatusUnprocessableEntity,
	// the server, not the image: busy with other images, retry later
	"over_capacity": http.StatusServiceUnavailable,

	// payments: the payments API
	"return_not_allowed":                 http.StatusBadRequest,
	"origin_not_allowed":                 http.StatusBadRequest,
	"action_not_allowed":                 http.StatusForbidden,
	"billing_account_assertion_required": http.StatusForbidden,
	"merchant_account_not_found":         http.StatusNotFound,
	"offer_not_found":                    http.StatusNotFound,
	"billing_account_not_found":          http.StatusNotFound,
	"payment_session_not_found":          http.StatusNotFound,
	"payment_method_not_found":           http.StatusNotFound,
	"resource_type_not_found":            http.StatusNotFound,
	"merchant_not_ready":                 http.StatusConflict,
	"session_unavailable":                http.StatusGone,
	// payments: the hosted checkout's browser routes
	"hosted_session_invalid": http.StatusUnauthorized,
	"card_declined":          http.StatusPaymentRequired,
	"purchase_not_found":     http.StatusNotFound,
	"purchase_in_progress":   http.StatusConflict,
	// payments: a payment session's create, whose key its subgraph keeps
	CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
}

// refusal turns a subgraph's refusal into the REST error it is; ok is false
// for anything else (a failure of the platform, or no GraphQL error at all).
func refusal(err error) (re *routeError, ok bool) {
	var gerrs subgraph.Errors
	if !errors.As(err, &gerrs) || len(gerrs) == 0 {
		return nil, false
	}
	code := strings.ToLower(gerrs.Code())
	status, known := refusalStatus[code]
	if !known && strings.HasPrefix(code, "invalid_") { // INVALID_CURSOR → 400 invalid_cursor
		status, known = http.StatusBadRequest, true
	}
	if !known {
		return nil, false
	}
	re = &routeError{Status: status, Code: code, Message: gerrs[0].Message}
	// A refusal that passes with time says when (matching's over_capacity).
	if s, ok := gerrs[0].Extensions["retryAfter"].(float64); ok && s > 0 {
		re.RetryAfter = int64(s)
	}
	return re, true
}
