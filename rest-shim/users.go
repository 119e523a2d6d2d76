package restshim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/access"
	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

var (
	opMe   = subgraph.MustParse(`query Me { me { id displayName firstName lastName email imageUrl coverUrl website bio } }`)
	opJWKS = subgraph.MustParse(`query OAuthJWKS { oauthJWKS }`)
)

// userOperations lists the internal operations on the users subgraph.
var userOperations = []*subgraph.Operation{opMe, opJWKS}

// GET /v1/me: the connected user, with x-service-key and an access token with
// profile:read (email:read adds the email). Fields the scopes do not allow, or
// the user has not filled in, are left out.
func handleMe(tokens *access.Tokens, users *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := tokens.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			msg := access.InvalidTokenMessage
			if errors.Is(err, access.ErrNoBearer) {
				msg = "send the user's access token: Authorization: Bearer <token>"
			}
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			apierr.Write(w, http.StatusUnauthorized, "invalid_token", msg)
			return
		}
		id, _ := trust.FromContext(r.Context())
		id = access.ForUser(id, claims)
		var data struct {
			Me map[string]any `json:"me"`
		}
		err = users.Do(trust.WithIdentity(r.Context(), id), opMe, nil, &data)
		var gerrs subgraph.Errors
		switch {
		case errors.As(err, &gerrs) && gerrs.Code() == "UNAUTHENTICATED":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			apierr.Write(w, http.StatusUnauthorized, "invalid_token", gerrs[0].Message)
			return
		case errors.As(err, &gerrs) && gerrs.Code() == "INSUFFICIENT_SCOPE":
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="profile:read"`)
			apierr.Write(w, http.StatusForbidden, "insufficient_scope", "the access token lacks the profile:read scope")
			return
		case err != nil:
			subgraphFailure(w, log, "the users service", err)
			return
		case data.Me == nil:
			apierr.Write(w, http.StatusUnauthorized, "invalid_token", "the token's user no longer exists")
			return
		}
		for k, v := range data.Me {
			if v == nil {
				delete(data.Me, k)
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(map[string]any{"data": data.Me})
	})
}

// GET /.well-known/jwks.json (anonymous): the keys that verify access tokens.
func handleJWKS(users *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := users.Field(r.Context(), opJWKS, nil, "oauthJWKS")
		if err != nil {
			subgraphFailure(w, log, "the users service", err)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=60")
		w.Write(raw)
	})
}

// FetchJWKS returns a function that fetches the token keys from the users
// subgraph, for access.NewTokens (the router uses it too).
func FetchJWKS(users *subgraph.Client) func(ctx context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) { return users.Field(ctx, opJWKS, nil, "oauthJWKS") }
}
