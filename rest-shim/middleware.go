package restshim

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/telemetry"
)

// withRecovery turns a panic into a 500 with the error body, logged once.
func withRecovery(log zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error().Interface("panic", v).Str("request_id", telemetry.RequestID(r.Context())).Str("path", r.URL.Path).Msg("handler panicked")
				apierr.Write(w, http.StatusInternalServerError, apierr.CodeInternal, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
