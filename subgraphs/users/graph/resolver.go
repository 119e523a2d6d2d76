// Package graph is the users subgraph's GraphQL API (gqlgen, Federation v2).
package graph

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/rs/zerolog"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/bus"
	"github.com/vitolahq/vitola/internal/pagination"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/subgraphs/users"
	"github.com/vitolahq/vitola/subgraphs/users/oauth"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Store users.Store
	Data  users.DataStore
	OAuth oauth.Store
	Auth  *oauth.Server
	// Bus carries live events between replicas (live.go); nil: none are sent
	// and subscriptions are refused.
	Bus bus.Bus
	Log zerolog.Logger

	lastSession atomic.Pointer[decodedSession] // live.go
}

// Options complete NewHandler.
type Options struct {
	// Bus carries live events (bus.NewLocal in one process, Redis pub/sub
	// across replicas); nil: an in-process bus of the handler's own.
	Bus bus.Bus
	Log zerolog.Logger
}

// Stores is everything the users subgraph keeps (its SQL store implements it).
type Stores interface {
	users.Store
	users.DataStore
	OAuthStore
}

// OAuthStore keeps the authorization server's clients, keys and grants.
type OAuthStore interface {
	oauth.Store
	oauth.GrantStore
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it); issuer is the API's public URL.
func NewHandler(st Stores, issuer string, opts ...Options) http.Handler {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Bus == nil {
		o.Bus = bus.NewLocal(0)
	}
	auth := &oauth.Server{Issuer: issuer, Users: st, Clients: st, Grants: st}
	go oauth.WarmUp()
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Store: st, Data: st, OAuth: st, Auth: auth, Bus: o.Bus, Log: o.Log}}))
}

// myPage answers a my* connection: the connected user's own items, behind
// scope; cursors are bound to the field and the user.
func myPage[T interface{ GetID() string }, E any](ctx context.Context, r *Resolver, scope, field string, a pagination.Args,
	list func(ctx context.Context, userID string, page pagination.Request) ([]T, error), edge func(string, T) E) ([]E, *pagination.PageInfo, error) {
	caller, err := r.connectedUser(ctx, scope)
	if err != nil {
		return nil, nil, err
	}
	return subgraph.Connection(ctx, a, pagination.ByID(field, caller.UserID),
		func(p pagination.Request) ([]T, error) { return list(ctx, caller.UserID, p) },
		func(v T) []string { return []string{v.GetID()} }, edge)
}

// own answers node(id:) (through _entities) for the connected user's data: the
// item when the caller owns it and its token has scope, else null, the same
// null as for an ID that does not exist.
func own[T any](ctx context.Context, r *Resolver, scope, id string, get func(ctx context.Context, id string) (*T, error), owner func(*T) string) (*T, error) {
	caller, err := r.connectedUser(ctx, scope)
	if err != nil {
		return nil, nil
	}
	v, err := get(ctx, id)
	if errors.Is(err, users.ErrNotFound) || (err == nil && owner(v) != caller.UserID) {
		return nil, nil
	}
	return v, err
}

// shimOnly guards the authorization server's internal fields: only the REST
// shim, which authenticates the user and the client, may call them.
func shimOnly(ctx context.Context) error {
	if caller, _ := trust.FromContext(ctx); caller.Caller != "shim" {
		return &gqlerror.Error{Message: "internal field", Path: graphql.GetPath(ctx), Extensions: map[string]any{"code": "FORBIDDEN"}}
	}
	return nil
}

// coded is a GraphQL error whose extensions.code is code (the shim answers
// INVALID_<FIELD> as a 400 invalid_<field>).
func coded(ctx context.Context, code, msg string) error {
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: map[string]any{"code": code}}
}

// oauthError carries an RFC 6749 error code to the shim.
func oauthError(ctx context.Context, code, desc string) error {
	return &gqlerror.Error{Message: desc, Path: graphql.GetPath(ctx), Extensions: map[string]any{"code": "OAUTH_" + strings.ToUpper(code)}}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr(s string) *string { return &s }

// connectedUser returns the caller when it acts for a user with scope. The
// subgraph checks this itself, from the identity in the internal token: the
// edge's check is not the only wall.
func (r *Resolver) connectedUser(ctx context.Context, scope string) (trust.Identity, error) {
	caller, _ := trust.FromContext(ctx)
	if caller.UserID == "" {
		return caller, &gqlerror.Error{Message: "this field needs an OAuth access token: send Authorization: Bearer <token>", Path: graphql.GetPath(ctx),
			Extensions: map[string]any{"code": "UNAUTHENTICATED"}}
	}
	if caller.TokenID != "" && r.Auth != nil {
		if revoked, err := r.Auth.AccessTokenRevoked(ctx, caller.TokenID, caller.FamilyID); err != nil {
			return caller, err
		} else if revoked {
			return caller, &gqlerror.Error{Message: "the access token has been revoked", Path: graphql.GetPath(ctx),
				Extensions: map[string]any{"code": "UNAUTHENTICATED"}}
		}
	}
	if !caller.HasScope(scope) {
		return caller, &gqlerror.Error{Message: "the access token lacks the " + scope + " scope", Path: graphql.GetPath(ctx),
			Extensions: map[string]any{"code": "INSUFFICIENT_SCOPE", "scope": scope}}
	}
	return caller, nil
}

// actsFor reports whether the caller acts for user id with a live token that
// has every scope: the same check as connectedUser, as a yes or no for fields
// that fall back to public data.
func (r *Resolver) actsFor(ctx context.Context, id, scope string, more ...string) bool {
	caller, err := r.connectedUser(ctx, scope)
	if err != nil || caller.UserID != id {
		return false
	}
	for _, s := range more {
		if !caller.HasScope(s) {
			return false
		}
	}
	return true
}

// ownUser returns a user's full profile (for the user itself): everything but
// the password hash; the email resolver decides on the email.
func (r *Resolver) ownUser(ctx context.Context, id string) (*users.User, error) {
	u, err := r.Store.User(ctx, id)
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	own := *u
	own.PasswordHash = ""
	return &own, nil
}

// publicUser returns the user as anyone may see it: a private profile keeps only
// its id and display name.
func (r *Resolver) publicUser(ctx context.Context, id string) (*users.User, error) {
	u, err := r.Store.User(ctx, id)
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if u.Private {
		return &users.User{ID: u.ID, DisplayName: u.DisplayName, CreatedAt: u.CreatedAt}, nil
	}
	return publicProfile(u), nil
}

// publicProfile is a public profile as anyone may read it: no email, no
// password hash.
func publicProfile(u *users.User) *users.User {
	pub := *u
	pub.Email, pub.PasswordHash = "", ""
	return &pub
}
