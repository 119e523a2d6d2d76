package restshim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

var (
	opFingerprint = subgraph.MustParse(`mutation Fingerprint($urls: [String!]!) { fingerprint(imageUrls: $urls) }`)
	opRecognize   = subgraph.MustParse(`query Recognize($fp: String!, $limit: Int!) {
  recognize(fingerprint: $fp, limit: $limit) { cigarId score evidenceId scores { vector color layout hash text textUsed } } }`)
	opCigarsByID = subgraph.MustParse(`query CigarsByID($r: [_Any!]!) {
  _entities(representations: $r) { ... on Cigar { id name brand { id name } } } }`)
	matchingOperations = []*subgraph.Operation{opFingerprint, opRecognize, opIdentify, opIdentifyMaxPrice}
)

// Prices of the paid AI routes, in credits (README, /docs).
const (
	// PriceFingerprintPerImage is the fingerprint route's price per photo.
	PriceFingerprintPerImage = 1
)

// Limits of the AI routes (the spec's).
const (
	maxFingerprintBytes = 256 << 10
)

// images are the image URLs a request gave, and whether it gave its one URL
// as imageUrl: matching numbers every URL in its messages ("imageUrls[0]:
// ..."), and a client should read the name of the field it sent.
type images struct {
	urls []string
	one  bool
}

// imageURLs reads the spec's image fields: imageUrl (one) or imageUrls (1 to 8).
func imageURLs(one *string, many []string) (images, *routeError) {
	bad := func(msg string) (images, *routeError) {
		return images{}, &routeError{http.StatusBadRequest, "invalid_image_urls", msg}
	}
	switch {
	case one != nil && many != nil:
		return bad("give imageUrl (one image) or imageUrls (up to 8), not both")
	case one != nil:
		if strings.TrimSpace(*one) == "" {
			return bad("imageUrl is empty")
		}
		return images{urls: []string{*one}, one: true}, nil
	case len(many) == 0:
		return bad("imageUrl or imageUrls (1 to 8 image URLs) is required")
	case len(many) > matching.MaxViews:
		return bad(fmt.Sprintf("imageUrls holds %d URLs: at most %d images per request", len(many), matching.MaxViews))
	}
	for i, u := range many {
		if strings.TrimSpace(u) == "" {
			return bad(fmt.Sprintf("imageUrls[%d] is empty", i))
		}
	}
	return images{urls: many}, nil
}

// failure is matchingFailure, naming the field the client sent.
func (im images) failure(err error) error {
	err = matchingFailure(err)
	var re *routeError
	if im.one && errors.As(err, &re) {
		if rest, ok := strings.CutPrefix(re.Message, "imageUrls[0]: "); ok {
			re.Message = "imageUrl: " + rest
		}
	}
	return err
}

// matchingFailure turns the matching subgraph's refusals into REST errors: a
// malformed image URL is the client's 400; an image that cannot be used (a
// blocked address, a failed fetch, too large, not an image) is 422 naming why.
func matchingFailure(err error) error {
	var gerrs subgraph.Errors
	if !errors.As(err, &gerrs) {
		return err
	}
	e := gerrs[0]
	switch e.Code {
	case "IMAGE_REFUSED":
		reason, _ := e.Extensions["reason"].(string)
		status := http.StatusUnprocessableEntity
		if reason == "invalid_image_url" || reason == "invalid_image_urls" {
			status = http.StatusBadRequest
		}
		return &routeError{status, reason, e.Message}
	case "NO_BAND":
		return &routeError{http.StatusUnprocessableEntity, "no_band_found", e.Message}
	case "FINGERPRINT_INVALID":
		msg := e.Message
		// A malformed fingerprint's message goes on with the decoder's
		// own words, which name Go types: what matters is said before.
		if bad := matching.ErrMalformedFingerprint.Error(); strings.HasPrefix(msg, bad) {
			msg = bad + ": pass back the whole object the fingerprint route returned"
		}
		return &routeError{http.StatusBadRequest, "invalid_fingerprint", msg}
	}
	return err
}

// fingerprintRoute is POST /v1/ai/cigars/fingerprint {imageUrl | imageUrls}:
// the response body is the sealed fingerprint itself, which recognize takes
// back whole.
func fingerprintRoute(matching *subgraph.Client) paidRoute {
	return paidRoute{
		name: "fingerprint",
		parse: func(_ context.Context, body []byte) (any, int64, error) {
			var in struct {
				ImageURL  *string  `json:"imageUrl"`
				ImageURLs []string `json:"imageUrls"`
			}
			if err := decodeBody(body, &in, "the body must be a JSON object with imageUrl or imageUrls"); err != nil {
				return nil, 0, err
			}
			im, rerr := imageURLs(in.ImageURL, in.ImageURLs)
			if rerr != nil {
				return nil, 0, rerr
			}
			return im, int64(len(im.urls)) * PriceFingerprintPerImage, nil
		},
		work: func(ctx context.Context, req any) (any, int64, error) {
			im := req.(images)
			var out struct{ Fingerprint string }
			if err := matching.Do(ctx, opFingerprint, map[string]any{"urls": im.urls}, &out); err != nil {
				return nil, 0, im.failure(err)
			}
			return json.RawMessage(out.Fingerprint), int64(len(im.urls)) * PriceFingerprintPerImage, nil
		},
	}
}

// POST /v1/ai/cigars/fingerprint/recognize {fingerprint, limit}: free.
func handleRecognize(matching, catalog *subgraph.Client, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Fingerprint json.RawMessage `json:"fingerprint"`
			Limit       *int            `json:"limit"`
		}
		if !readJSON(w, r, maxFingerprintBytes, &in, "the body must be a JSON object with fingerprint (the whole object the fingerprint route returned) and limit") {
			return
		}
		if len(in.Fingerprint) == 0 || in.Fingerprint[0] != '{' {
			apierr.Write(w, http.StatusBadRequest, "invalid_fingerprint", "fingerprint is required: pass the whole object the fingerprint route returned")
			return
		}
		limit := recognize.DefaultLimit
		if in.Limit != nil {
			if *in.Limit < 1 || *in.Limit > recognize.MaxLimit {
				apierr.Write(w, http.StatusBadRequest, "invalid_limit", fmt.Sprintf("limit must be a whole number from 1 to %d", recognize.MaxLimit))
				return
			}
			limit = *in.Limit
		}
		var rec struct {
			Recognize []struct {
				CigarID    string          `json:"cigarId"`
				Score      float64         `json:"score"`
				EvidenceID string          `json:"evidenceId"`
				Scores     json.RawMessage `json:"scores"`
			}
		}
		if err := matching.Do(r.Context(), opRecognize, map[string]any{"fp": string(in.Fingerprint), "limit": limit}, &rec); err != nil {
			var re *routeError
			if errors.As(matchingFailure(err), &re) {
				apierr.Write(w, re.Status, re.Code, re.Message)
				return
			}
			subgraphFailure(w, log, "matching", err)
			return
		}
		// Names and brands come from the catalog, which owns cigars.
		reps := make([]map[string]any, len(rec.Recognize))
		for i, c := range rec.Recognize {
			reps[i] = map[string]any{"__typename": "Cigar", "id": c.CigarID}
		}
		var cigars struct {
			Entities []*struct {
				ID    string `json:"id"`
				Name  string `json:"name"`
				Brand struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"brand"`
			} `json:"_entities"`
		}
		if len(reps) > 0 {
			if err := catalog.Do(r.Context(), opCigarsByID, map[string]any{"r": reps}, &cigars); err != nil {
				subgraphFailure(w, log, "the catalog", err)
				return
			}
		}
		type candidate struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Brand    any             `json:"brand"`
			Score    float64         `json:"score"`
			Evidence json.RawMessage `json:"evidence"`
		}
		out := []candidate{}
		for i, c := range rec.Recognize {
			if i >= len(cigars.Entities) || cigars.Entities[i] == nil || cigars.Entities[i].ID == "" {
				continue // evidence of a cigar the catalog no longer has
			}
			e := cigars.Entities[i]
			ev, _ := json.Marshal(map[string]any{"id": c.EvidenceID, "scores": c.Scores})
			out = append(out, candidate{ID: e.ID, Name: e.Name, Brand: e.Brand, Score: c.Score, Evidence: ev})
		}
		writeJSON(w, http.StatusOK, map[string]any{"candidates": out, "meta": map[string]any{"limit": limit}})
	})
}
