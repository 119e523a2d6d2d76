package restshim

import (
	"errors"
	"net/http"

	"github.com/vitolahq/vitola/internal/jsonbody"
)

// Every route that reads a JSON body reads it through jsonbody: Content-Type
// application/json (415), a size limit (413), one value, no member twice, no
// unknown or misspelt field (400 invalid_body).

// readJSON reads r's JSON body, at most limit bytes, into v; on failure it
// answers the error and returns false. usage says what the body holds: it
// leads invalid_body messages.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, usage string) bool {
	body, err := jsonbody.Read(w, r, limit)
	if err == nil {
		err = jsonbody.Decode(body, v)
	}
	if err != nil {
		bodyError(err, usage).write(w)
		return false
	}
	return true
}

// decodeBody decodes a JSON body into v; the error is a *routeError.
func decodeBody(body []byte, v any, usage string) error {
	if err := jsonbody.Decode(body, v); err != nil {
		return bodyError(err, usage)
	}
	return nil
}

func bodyError(err error, usage string) *routeError {
	var e *jsonbody.Error
	if !errors.As(err, &e) {
		return &routeError{Status: http.StatusBadRequest, Code: jsonbody.CodeInvalid, Message: usage}
	}
	msg := e.Message
	if e.Code == jsonbody.CodeInvalid && usage != "" {
		msg = usage + ": " + msg
	}
	return &routeError{Status: e.Status, Code: e.Code, Message: msg}
}
