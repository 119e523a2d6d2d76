// Package graph is the matching subgraph's internal GraphQL API (gqlgen). Only
// the shim calls it.
package graph

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/graph/model"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/matcher"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// Resolver holds the subgraph's dependencies.
type Resolver struct {
	Matcher *matcher.Matcher
}

// NewHandler returns the subgraph's GraphQL handler (without the internal-token
// check, which the caller wraps around it).
func NewHandler(m *matcher.Matcher) http.Handler {
	return subgraph.NewGraphQLServer(NewExecutableSchema(Config{Resolvers: &Resolver{Matcher: m}}))
}

// CodeForbidden refuses a caller other than the shim. Every refusal of a
// request has its own code (see matchError).
const CodeForbidden = "FORBIDDEN"

// shimOnly refuses callers other than the shim acting for a developer key.
func shimOnly(ctx context.Context) error {
	if id, _ := trust.FromContext(ctx); id.Caller != "shim" || id.KeyID == "" {
		return fail(ctx, CodeForbidden, "matching is called only by the shim, for a developer key", nil)
	}
	return nil
}

func fail(ctx context.Context, code, msg string, ext map[string]any) error {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	return &gqlerror.Error{Message: msg, Path: graphql.GetPath(ctx), Extensions: e}
}

// matchError gives the matcher's refusals their codes (the REST error codes,
// in upper case); others stay internal.
func matchError(ctx context.Context, err error) error {
	var (
		fe *imagefetch.Error
		re *matching.Refusal
	)
	switch {
	case errors.As(err, &fe) && fe.RetryAfter > 0:
		// The shim answers it with Retry-After, in whole seconds.
		return fail(ctx, strings.ToUpper(fe.Code), fe.Message, map[string]any{"retryAfter": int64(fe.RetryAfter / time.Second)})
	case errors.As(err, &fe):
		return fail(ctx, strings.ToUpper(fe.Code), fe.Message, nil)
	case errors.As(err, &re):
		return fail(ctx, strings.ToUpper(re.Code), re.Message, nil)
	case errors.Is(err, matcher.ErrNoBand):
		return fail(ctx, "NO_BAND_FOUND", err.Error(), nil)
	case errors.Is(err, matching.ErrMalformedFingerprint):
		// Its message goes on with the decoder's own words, which name Go
		// types: what matters is said before.
		return fail(ctx, "INVALID_FINGERPRINT", matching.ErrMalformedFingerprint.Error()+": pass back the whole object the fingerprint route returned", nil)
	case errors.Is(err, matching.ErrBadSeal), errors.Is(err, matching.ErrStaleFingerprint):
		return fail(ctx, "INVALID_FINGERPRINT", err.Error(), nil)
	}
	return err
}

func pointers[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

// identifyInput is the matcher's view of the API's input.
func identifyInput(in model.IdentifyInput) matcher.IdentifyInput {
	out := matcher.IdentifyInput{ImageURLs: in.ImageUrls, Limit: in.SuggestionLimit, Mode: in.ResearchMode, Profile: in.ResearchProfile, Force: in.Force}
	if in.Prompt != nil {
		out.Prompt = *in.Prompt
	}
	return out
}
