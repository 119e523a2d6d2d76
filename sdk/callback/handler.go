package callback

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes bounds the body Handler reads: callbacks are a few kilobytes.
const MaxBodyBytes = 1 << 20

// Handler verifies callbacks for next. It refuses what it cannot trust itself,
// before next runs, with a JSON {"error": code, "message"} body: 405 for a
// method other than POST, 401 for missing or malformed headers, a timestamp
// outside the tolerance or no matching signature (checked before the body is
// read), 413 for a body over MaxBodyBytes, 400 for a signed body that is not an
// event, 500 when v has no secret. It never answers 410, which would turn the
// endpoint's callbacks off.
//
// next gets the verified event, with r.Body holding the raw bytes again. It
// records the event, deduplicated on its ID, in the same transaction as the
// fulfillment, and answers 2xx only after the commit (see the example).
//
// Handler panics when v has no secret or an empty one, so that a receiver
// started without its secret fails at start-up rather than at each callback.
func Handler(v Verifier, next func(w http.ResponseWriter, r *http.Request, e *Event)) http.Handler {
	if err := v.check(); err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", "callbacks are POST requests")
			return
		}
		sh, err := v.checkHeaders(r.Header)
		if err != nil {
			refuseErr(w, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				refuseErr(w, fail(CodeBodyTooLarge, "the body is over %d bytes", MaxBodyBytes))
				return
			}
			refuse(w, http.StatusBadRequest, "unreadable_body", "the body could not be read")
			return
		}
		e, err := v.verifyBody(sh, body)
		if err != nil {
			refuseErr(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r, e)
	})
}

func refuseErr(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = fail(CodeMisconfigured, "the callback could not be verified")
	}
	refuse(w, e.Status(), e.Code, e.Message)
}

func refuse(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
}
