// Package apierr writes the platform's REST error body, {"error": code, "message":
// text}, used by every REST route (the payments API's shape, platform-wide),
// and cuts what any error message, REST's or GraphQL's, repeats of a client's
// input (Clip, Quote).
package apierr

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
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

// MaxEcho is how many characters of a client's input an error message repeats:
// enough to recognize it, never a megabyte echoed back (REST and GraphQL).
const MaxEcho = 64

// Clip is what an error message repeats of a client's input: at most MaxEcho
// characters, then "…" when it was longer; valid UTF-8.
func Clip(s string) string {
	n := 0
	for i := range s {
		if n == MaxEcho {
			return strings.ToValidUTF8(s[:i], "") + "…"
		}
		n++
	}
	return strings.ToValidUTF8(s, "")
}

// Quote is Clip in double quotes, escaped as Go quotes strings: how a message
// names an ID, a barcode, an origin or any other value a client sent.
func Quote(s string) string { return strconv.Quote(Clip(s)) }

// quoted is a double-quoted value in a message, escapes included.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// ClipQuoted cuts, as Clip does, every double-quoted value in a message that
// code outside the platform words without cutting what it repeats (the
// GraphQL engine's validation: `Cannot query field "…"`).
func ClipQuoted(msg string) string {
	if len(msg) <= MaxEcho {
		return msg
	}
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		cut := Clip(inner)
		if cut == inner {
			return q
		}
		// Never leave half an escape before the closing quote.
		body := strings.TrimSuffix(cut, "…")
		if n := len(body) - len(strings.TrimRight(body, `\`)); n%2 == 1 {
			body = body[:len(body)-1]
		}
		return `"` + body + `…"`
	})
}
