// Package graph is the matching subgraph's internal GraphQL API (gqlgen). Only
// the shim calls it.
package graph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
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

// Error codes of the API (extensions.code).
const (
	CodeImageRefused       = "IMAGE_REFUSED"
	CodeNoBand             = "NO_BAND"
	CodeFingerprintInvalid = "FINGERPRINT_INVALID"
	CodeBadInput           = "BAD_USER_INPUT"
	CodeForbidden          = "FORBIDDEN"
)

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

// matchError gives the matcher's errors their codes; others stay internal.
func matchError(ctx context.Context, err error) error {
	var fe *imagefetch.Error
	switch {
	case errors.As(err, &fe):
		return fail(ctx, CodeImageRefused, fe.Message, map[string]any{"reason": fe.Code})
	case errors.Is(err, matcher.ErrNoBand):
		return fail(ctx, CodeNoBand, err.Error(), nil)
	case errors.Is(err, matching.ErrBadSeal), errors.Is(err, matching.ErrMalformedFingerprint), errors.Is(err, matching.ErrStaleFingerprint):
		return fail(ctx, CodeFingerprintInvalid, err.Error(), nil)
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

// checkIdentify applies identify's input rules (the shim checks them first,
// with REST errors; these hold for any caller).
func checkIdentify(in matcher.IdentifyInput) error {
	switch {
	case len(in.ImageURLs) > matching.MaxViews:
		return fmt.Errorf("at most %d images", matching.MaxViews)
	case len(in.ImageURLs) == 0 && strings.TrimSpace(in.Prompt) == "":
		return errors.New("without images, a prompt is required")
	case utf8.RuneCountInString(in.Prompt) > identify.MaxPrompt:
		return fmt.Errorf("prompt is longer than %d characters", identify.MaxPrompt)
	case in.Limit < 1 || in.Limit > identify.MaxSuggestions:
		return fmt.Errorf("suggestionLimit must be 1 to %d", identify.MaxSuggestions)
	case in.Mode != identify.Auto && in.Mode != identify.OpenWorld && in.Mode != identify.CatalogGuided:
		return fmt.Errorf("researchMode %q: want auto, open_world or catalog_guided", in.Mode)
	case in.Profile != identify.Quick && in.Profile != identify.Thorough:
		return fmt.Errorf("researchProfile %q: want quick or thorough", in.Profile)
	}
	return nil
}
