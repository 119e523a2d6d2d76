package restshim

import (
	"context"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/idempotency"
)

// Refusals of idempotent requests.
const (
	// CodeIdempotencyKeyRequired: a missing or invalid key.
	CodeIdempotencyKeyRequired = "idempotency_key_required"
	// CodeIdempotencyKeyReused: the key named another request.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
)

// idempotencyKey reads the request's Idempotency-Key; it answers the refusal
// itself when there is none, it is invalid, or there are several.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := idempotency.KeyFromHeader(r.Header)
	if err != nil {
		apierr.Write(w, http.StatusBadRequest, CodeIdempotencyKeyRequired, err.Error())
		return "", false
	}
	return key, true
}

// claimKey claims key for the request (scope, route and body) and answers
// itself what is not new work: a replay of the stored response
// (Idempotent-Replayed: true), a request still running (409), another request
// under the same key (422), a store failure (503). It returns the claim when
// the request is to run.
func claimKey(w http.ResponseWriter, r *http.Request, idem *idempotency.Service, scope, route, key string, body []byte, log zerolog.Logger) (idempotency.Claim, bool) {
	d, err := idem.Begin(r.Context(), scope, key, idempotency.RequestHash(r.Method, route, body))
	switch {
	case err != nil:
		log.Error().Err(err).Msg("idempotency claim")
		apierr.Write(w, http.StatusServiceUnavailable, apierr.CodeUnavailable, "the request could not be recorded; try again shortly")
	case d.Outcome == idempotency.InFlight:
		apierr.Write(w, http.StatusConflict, "idempotency_key_in_use", "a request with this Idempotency-Key is still running; retry when it has finished")
	case d.Outcome == idempotency.Mismatch:
		apierr.Write(w, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, "this Idempotency-Key was used with a different request; use a new key for a new request")
	case d.Outcome == idempotency.Replay:
		writeStored(w, d.Response, true)
	default:
		return d.Claim, true
	}
	return idempotency.Claim{}, false
}

// writeStored sends a stored (or about to be stored) response.
func writeStored(w http.ResponseWriter, resp *idempotency.Response, replayed bool) {
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

// runIdempotent runs an idempotent request under its claim: a success (2xx)
// is stored for replay and sent; a refusal or failure releases the key (the
// work changed nothing), so the client may fix the request and retry with it.
func runIdempotent(ctx context.Context, w http.ResponseWriter, idem *idempotency.Service, claim idempotency.Claim, log zerolog.Logger,
	run func(ctx context.Context) (*idempotency.Response, error), fail func(http.ResponseWriter, error)) {
	runIdempotentKeeping(ctx, w, idem, claim, log, run, fail, func(status int) bool { return status < 300 })
}

// runIdempotentKeeping is runIdempotent with its own rule of which answers
// are the request's outcome (stored and replayed): keep(status).
func runIdempotentKeeping(ctx context.Context, w http.ResponseWriter, idem *idempotency.Service, claim idempotency.Claim, log zerolog.Logger,
	run func(ctx context.Context) (*idempotency.Response, error), fail func(http.ResponseWriter, error), keep func(status int) bool) {
	// A client hanging up must not leave the key claimed half-way.
	ctx = context.WithoutCancel(ctx)
	resp, err := run(ctx)
	if err != nil || !keep(resp.Status) {
		if rerr := idem.Release(ctx, claim); rerr != nil {
			log.Error().Err(rerr).Msg("release idempotency key")
		}
		if err != nil {
			fail(w, err)
		} else {
			writeStored(w, resp, false)
		}
		return
	}
	if err := idem.Finish(ctx, claim, *resp); err != nil {
		log.Error().Err(err).Msg("store idempotent response") // the response still goes out
	}
	writeStored(w, resp, false)
}
