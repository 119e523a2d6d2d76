package restshim

import (
	"context"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/apierr"
	"github.com/vitolahq/vitola/trust"
)

// KeyChecker authenticates developer keys (access.Service implements it).
type KeyChecker interface {
	Authenticate(ctx context.Context, plain string) (access.Key, error)
}

// RequireKey lets a request through only with a live developer key carrying
// entitlement (none when empty): 401 for a missing, unknown or revoked key, 403
// for a missing entitlement. The key's identity goes into the context, for the
// internal calls the route makes.
func RequireKey(keys KeyChecker, log zerolog.Logger, entitlement string, next http.Handler) http.Handler {
	return requireKey(keys, log, entitlement, false, next)
}

// requireKey is RequireKey; withBearer also takes the key from
// "Authorization: Bearer <key>" (the sessions feed, whose documented example
// sends it there).
func requireKey(keys KeyChecker, log zerolog.Logger, entitlement string, withBearer bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain := r.Header.Get(access.Header)
		if b, ok := access.BearerToken(r.Header.Get("Authorization")); ok && plain == "" && withBearer {
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
		if entitlement != "" && !key.Has(entitlement) {
			apierr.Write(w, http.StatusForbidden, "entitlement_required",
				"this route needs a developer key with the "+entitlement+" entitlement: create one with `vitola keys create --name NAME --entitlement "+entitlement+"`")
			return
		}
		ctx := trust.WithIdentity(r.Context(), trust.Identity{KeyID: key.ID, Entitlements: key.Entitlements})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
