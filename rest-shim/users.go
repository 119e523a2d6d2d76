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
var userOperations = []*subgraph.Operation{opMe, opJWKS, opStartSession}

// GET /v1/me: the connected user, with x-service-key and an access token with
// profile:read (email:read adds the email). Fields the scopes do not allow, or
// the user has not filled in, are left out.
func handleMe(tokens *access.Tokens, users *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ok := connectedUser(w, r, tokens)
		if !ok {
			return
		}
		var data struct {
			Me map[string]any `json:"me"`
		}
		err := users.Do(ctx, opMe, nil, &data)
		switch {
		case userRefusal(w, err, "profile:read"):
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

// connectedUser verifies the request's OAuth access token and returns a
// context that carries the key's identity with the token's user, scopes, jti
// and family, for the users subgraph; on failure it answers 401 invalid_token.
func connectedUser(w http.ResponseWriter, r *http.Request, tokens *access.Tokens) (context.Context, bool) {
	claims, err := tokens.Authenticate(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		msg := access.InvalidTokenMessage
		if errors.Is(err, access.ErrNoBearer) {
			msg = "send the user's access token: Authorization: Bearer <token>"
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		apierr.Write(w, http.StatusUnauthorized, "invalid_token", msg)
		return nil, false
	}
	id, _ := trust.FromContext(r.Context())
	return trust.WithIdentity(r.Context(), access.ForUser(id, claims)), true
}

// userRefusal answers the users subgraph's refusal of a connected user's call
// (a revoked token: 401; a token without scope: 403) and reports whether err
// was one.
func userRefusal(w http.ResponseWriter, err error, scope string) bool {
	var gerrs subgraph.Errors
	switch {
	case errors.As(err, &gerrs) && gerrs.Code() == "UNAUTHENTICATED":
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		apierr.Write(w, http.StatusUnauthorized, "invalid_token", gerrs[0].Message)
		return true
	case errors.As(err, &gerrs) && gerrs.Code() == "INSUFFICIENT_SCOPE":
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
		apierr.Write(w, http.StatusForbidden, "insufficient_scope", "the access token lacks the "+scope+" scope")
		return true
	}
	return false
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
