package restshim

import (
	"context"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/trust"
)

// KeyChecker authenticates developer keys (access.Service implements it).
type KeyChecker interface {
	Authenticate(ctx context.Context, plain string) (access.Key, error)
}

// RequireKey lets a request through only with a live developer key carrying
// entitlement (none when empty): 401 for a missing, unknown or revoked key, 403
// for a missing entitlement or a publishable key (those read only the public
// routes). The key's identity goes into the context, for the internal calls the
// route makes.
func RequireKey(keys KeyChecker, log zerolog.Logger, entitlement string, next http.Handler) http.Handler {
	return requireKey(keys, log, keyRule{Entitlement: entitlement}, next)
}

// spendRequest spends one request of the key's quota, adds the RateLimit
// headers, and answers a refusal itself (429 rate_limited).
func spendRequest(w http.ResponseWriter, r *http.Request, quotas *access.Quotas, key access.Key) bool {
	v := quotas.Requests(r.Context(), key)
	v.SetHeaders(w.Header())
	if v.Refused {
		apierr.Write(w, http.StatusTooManyRequests, access.CodeRateLimited, v.Message())
		return false
	}
	return true
}

// keyRule says what a route accepts.
type keyRule struct {
	Entitlement string
	// Public routes (the sessions feeds) take the key from "Authorization:
	// Bearer <key>" too, as the spec's example sends it, and accept publishable
	// keys from their origins, answering them with CORS headers.
	Public bool
	// Quotas, when set, spends the key's requests-per-second quota.
	Quotas *access.Quotas
}

func requireKey(keys KeyChecker, log zerolog.Logger, rule keyRule, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain := r.Header.Get(access.Header)
		if b, ok := access.BearerToken(r.Header.Get("Authorization")); ok && plain == "" && rule.Public {
			plain = b
		}
		key, err := keys.Authenticate(r.Context(), plain)
		if err != nil {
			status, msg := access.Refusal(err)
			code := apierr.CodeUnauthorized
			if status >= 500 {
				log.Error().Err(err).Msg("authenticate developer key")
				code = apierr.CodeUnavailable
			}
			apierr.Write(w, status, code, msg)
			return
		}
		if !spendRequest(w, r, rule.Quotas, key) {
			return
		}
		if key.Publishable {
			origin := r.Header.Get("Origin")
			switch {
			case !rule.Public:
				apierr.Write(w, http.StatusForbidden, "publishable_key", "a publishable key reads only the public routes (the sessions feeds); use a secret key from your server")
				return
			case !key.AllowsOrigin(origin):
				apierr.Write(w, http.StatusForbidden, "origin_not_allowed", "this publishable key is not valid from origin "+apierr.Quote(origin)+": add it with `vitola keys create --publishable --origin`")
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Add("Vary", "Origin")
		}
		if rule.Entitlement != "" && !key.Has(rule.Entitlement) {
			apierr.Write(w, http.StatusForbidden, "entitlement_required",
				"this route needs a developer key with the "+rule.Entitlement+" entitlement: create one with `vitola keys create --name NAME --entitlement "+rule.Entitlement+"`")
			return
		}
		ctx := trust.WithIdentity(r.Context(), key.Identity())
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// OriginChecker answers CORS preflights (access.Service implements it).
type OriginChecker interface {
	OriginRegistered(ctx context.Context, origin string) (bool, error)
}

// handlePreflight answers a public route's CORS preflight: only origins some
// publishable key lists get the CORS headers.
func handlePreflight(origins OriginChecker, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		ok, err := origins.OriginRegistered(r.Context(), origin)
		if err != nil {
			log.Error().Err(err).Msg("CORS preflight")
		}
		w.Header().Add("Vary", "Origin")
		if !ok {
			apierr.Write(w, http.StatusForbidden, "origin_not_allowed", "no publishable key is registered for origin "+apierr.Quote(origin))
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "x-service-key, authorization")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}
