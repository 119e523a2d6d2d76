package restshim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The AI routes read the HTTP request's shape and hand the rest to the
// matching subgraph, which owns every rule of a request (how many images,
// what an image reference may be, the prompt, the limits) and its price: a
// refusal comes back as a GraphQL error whose code the shim maps to HTTP
// (refusalStatus). The price is asked for, and the request so checked,
// before any credits are held.

var (
	opFingerprint      = subgraph.MustParse(`mutation Fingerprint($urls: [String!]!) { fingerprint(imageUrls: $urls) }`)
	opFingerprintPrice = subgraph.MustParse(`query FingerprintPrice($urls: [String!]!) { fingerprintPrice(imageUrls: $urls) }`)
	opRecognize        = subgraph.MustParse(`query Recognize($fp: String!, $limit: Int) {
  recognize(fingerprint: $fp, limit: $limit) { limit candidates { cigarId score evidenceId scores { vector color layout hash text textUsed keypoints inliers } } } }`)
	opCigarsByID = subgraph.MustParse(`query CigarsByID($r: [_Any!]!) {
  _entities(representations: $r) { ... on Cigar { id name brand { id name } } } }`)
	matchingOperations = []*subgraph.Operation{opFingerprint, opFingerprintPrice, opRecognize, opIdentify, opIdentifyPrice}
)

// maxFingerprintBytes bounds the recognize route's body: a fingerprint the
// fingerprint route returned, passed back whole (eight photos' views are
// up to about 850 KB, mostly their keypoints).
const maxFingerprintBytes = 1 << 20

// images are the image references a request gave (URLs or data URLs), and
// whether it gave its one reference as imageUrl: matching numbers every
// reference in its messages ("imageUrls[0]: ..."), and a client should read
// the name of the field it sent.
type images struct {
	urls []string
	one  bool
}

// imageRefs reads the spec's image fields, imageUrl (one) or imageUrls (a
// list; how long is matching's rule), into the list matching takes.
func imageRefs(one *string, many []string) (images, *routeError) {
	if one != nil && many != nil {
		return images{}, &routeError{Status: http.StatusBadRequest, Code: "invalid_image_urls", Message: "give imageUrl (one image) or imageUrls (a list), not both"}
	}
	if one != nil {
		return images{urls: []string{*one}, one: true}, nil
	}
	if many == nil {
		many = []string{}
	}
	return images{urls: many}, nil
}

// failure is a matching refusal as the REST error it is, naming the field
// the client sent; anything else passes through (the platform's failure).
func (im images) failure(err error) error {
	re, ok := refusal(err)
	if !ok {
		return err
	}
	if im.one {
		if rest, ok := strings.CutPrefix(re.Message, "imageUrls[0]: "); ok {
			re.Message = "imageUrl: " + rest
		}
	}
	return re
}

// fingerprintRequest is the fingerprint route's parsed request and its price.
type fingerprintRequest struct {
	images images
	price  int64
}

// fingerprintRoute is POST /v1/ai/cigars/fingerprint {imageUrl | imageUrls}:
// the response body is the sealed fingerprint itself, which recognize takes
// back whole.
func fingerprintRoute(matching *subgraph.Client) paidRoute {
	return paidRoute{
		name: "fingerprint",
		parse: func(ctx context.Context, body []byte) (any, int64, error) {
			var in struct {
				ImageURL  *string  `json:"imageUrl"`
				ImageURLs []string `json:"imageUrls"`
			}
			if err := decodeBody(body, &in, "the body must be a JSON object with imageUrl or imageUrls"); err != nil {
				return nil, 0, err
			}
			im, rerr := imageRefs(in.ImageURL, in.ImageURLs)
			if rerr != nil {
				return nil, 0, rerr
			}
			var out struct{ FingerprintPrice int64 }
			if err := matching.Do(ctx, opFingerprintPrice, map[string]any{"urls": im.urls}, &out); err != nil {
				return nil, 0, im.failure(err)
			}
			return fingerprintRequest{im, out.FingerprintPrice}, out.FingerprintPrice, nil
		},
		work: func(ctx context.Context, req any) (any, int64, error) {
			in := req.(fingerprintRequest)
			var out struct{ Fingerprint string }
			if err := matching.Do(ctx, opFingerprint, map[string]any{"urls": in.images.urls}, &out); err != nil {
				return nil, 0, in.images.failure(err)
			}
			return json.RawMessage(out.Fingerprint), in.price, nil
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
		var rec struct {
			Recognize struct {
				Limit      int
				Candidates []struct {
					CigarID    string          `json:"cigarId"`
					Score      float64         `json:"score"`
					EvidenceID string          `json:"evidenceId"`
					Scores     json.RawMessage `json:"scores"`
				}
			}
		}
		if err := matching.Do(r.Context(), opRecognize, map[string]any{"fp": string(in.Fingerprint), "limit": in.Limit}, &rec); err != nil {
			if re, ok := refusal(err); ok {
				re.write(w)
				return
			}
			subgraphFailure(w, log, "matching", err)
			return
		}
		// Names and brands come from the catalog, which owns cigars.
		reps := make([]map[string]any, len(rec.Recognize.Candidates))
		for i, c := range rec.Recognize.Candidates {
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
		for i, c := range rec.Recognize.Candidates {
			if i >= len(cigars.Entities) || cigars.Entities[i] == nil || cigars.Entities[i].ID == "" {
				continue // evidence of a cigar the catalog no longer has
			}
			e := cigars.Entities[i]
			ev, _ := json.Marshal(map[string]any{"id": c.EvidenceID, "scores": c.Scores})
			out = append(out, candidate{ID: e.ID, Name: e.Name, Brand: e.Brand, Score: c.Score, Evidence: ev})
		}
		writeJSON(w, http.StatusOK, map[string]any{"candidates": out, "meta": map[string]any{"limit": rec.Recognize.Limit}})
	})
}
