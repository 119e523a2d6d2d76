// Package apierr writes the platform's REST error body, {"error": code, "message":
// text}, used by every REST route (the payments API's shape, platform-wide).
package apierr

import (
	"encoding/json"
	"net/http"
)

// Body is the JSON error object of every REST route.
type Body struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Stable codes shared by several components. Routes add their own.
const (
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeBadRequest       = "bad_request"
	CodeInternal         = "internal_error"
	CodeUnavailable      = "unavailable"
)

// Write sends status with the error body. Messages must never hold secrets: they
// go to the client verbatim.
func Write(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Body{Error: code, Message: message})
}
