package restshim

import (
	"context"

	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

var opIdentify = subgraph.MustParse(`mutation Identify($input: IdentifyInput!) {
  identify(input: $input) {
    status match { ...idc } suggestions { ...idc } pendingSuggestions { ...idc } openWorld { text }
    source imageCount candidateCount modelFallbackUsed decisionReason cost } }
fragment idc on IdentifiedCigar { id cigarId brand name confidence evidence }`)

var opIdentifyPrice = subgraph.MustParse(`query IdentifyPrice($input: IdentifyInput!) { identifyPrice(input: $input) }`)

// identifyRequest is the identify route's body, as the spec names its fields.
type identifyRequest struct {
	ImageURL        *string  `json:"imageUrl"`
	ImageURLs       []string `json:"imageUrls"`
	Prompt          *string  `json:"prompt"`
	SuggestionLimit *int     `json:"suggestionLimit"`
	ResearchMode    *string  `json:"researchMode"`
	ResearchProfile *string  `json:"researchProfile"`
	// Force identifies from the prompt alone when no image is given.
	Force *bool `json:"force"`
}

// matchedCigar is a candidate in the spec's match result shape: cigar_id is the
// catalog number; id is the public ID.
type matchedCigar struct {
	CigarID    int     `json:"cigar_id"`
	ID         string  `json:"id"`
	Brand      string  `json:"brand"`
	Name       string  `json:"name"`
	Confidence float64 `json:"confidence"`
	Evidence   string  `json:"evidence"`
}

type identifyResult struct {
	Status             string            `json:"status"`
	Match              *matchedCigar     `json:"match,omitempty"`
	Suggestions        []matchedCigar    `json:"suggestions"`
	PendingSuggestions []matchedCigar    `json:"pendingSuggestions"`
	OpenWorld          *openWorldReading `json:"openWorld,omitempty"`
	Metadata           struct {
		Source            string `json:"source"`
		ImageCount        int    `json:"image_count"`
		CandidateCount    int    `json:"candidate_count"`
		ModelFallbackUsed bool   `json:"model_fallback_used"`
		DecisionReason    string `json:"decision_reason"`
	} `json:"metadata"`
}

// openWorldReading is what was read from a band the catalog does not know.
type openWorldReading struct {
	Text string `json:"text"`
}

// identifyInput is identify's parsed request: matching's input, and the
// images as the client named them.
type identifyInput struct {
	vars   map[string]any
	images images
}

// identifyRoute is POST /v1/ai/cigars/identify (and its alias POST /v1/matches).
func identifyRoute(matching *subgraph.Client) paidRoute {
	return paidRoute{
		name: "identify",
		parse: func(ctx context.Context, body []byte) (any, int64, error) {
			var in identifyRequest
			if err := decodeBody(body, &in, "the body must be a JSON object with imageUrl or imageUrls and optionally prompt, suggestionLimit, researchMode, researchProfile and force (a boolean)"); err != nil {
				return nil, 0, err
			}
			// Matching's input, with only what the client gave: matching owns
			// the defaults and every rule.
			im, rerr := imageRefs(in.ImageURL, in.ImageURLs)
			if rerr != nil {
				return nil, 0, rerr
			}
			vars := map[string]any{"imageUrls": im.urls}
			if in.Prompt != nil {
				vars["prompt"] = *in.Prompt
			}
			if in.SuggestionLimit != nil {
				vars["suggestionLimit"] = *in.SuggestionLimit
			}
			if in.ResearchMode != nil {
				vars["researchMode"] = *in.ResearchMode
			}
			if in.ResearchProfile != nil {
				vars["researchProfile"] = *in.ResearchProfile
			}
			if in.Force != nil {
				vars["force"] = *in.Force
			}
			// Matching checks the request and answers the most it can cost:
			// it knows whether a vision model is configured.
			var price struct{ IdentifyPrice int64 }
			if err := matching.Do(ctx, opIdentifyPrice, map[string]any{"input": vars}, &price); err != nil {
				return nil, 0, im.failure(err)
			}
			return identifyInput{vars, im}, price.IdentifyPrice, nil
		},
		work: func(ctx context.Context, req any) (any, int64, error) {
			in := req.(identifyInput)
			var out struct {
				Identify struct {
					Status                          string
					Match                           *identifiedCigar
					Suggestions, PendingSuggestions []identifiedCigar
					OpenWorld                       *openWorldReading
					Source                          string
					ImageCount, CandidateCount      int
					ModelFallbackUsed               bool
					DecisionReason                  string
					Cost                            int64
				}
			}
			if err := matching.Do(ctx, opIdentify, map[string]any{"input": in.vars}, &out); err != nil {
				return nil, 0, in.images.failure(err)
			}
			id := out.Identify
			res := identifyResult{Status: id.Status, Suggestions: convert(id.Suggestions), PendingSuggestions: convert(id.PendingSuggestions), OpenWorld: id.OpenWorld}
			if id.Match != nil {
				m := id.Match.spec()
				res.Match = &m
			}
			res.Metadata.Source, res.Metadata.ImageCount, res.Metadata.CandidateCount = id.Source, id.ImageCount, id.CandidateCount
			res.Metadata.ModelFallbackUsed, res.Metadata.DecisionReason = id.ModelFallbackUsed, id.DecisionReason
			return res, id.Cost, nil
		},
	}
}

type identifiedCigar struct {
	ID         string
	CigarID    int
	Brand      string
	Name       string
	Confidence float64
	Evidence   string
}

func (c identifiedCigar) spec() matchedCigar {
	return matchedCigar{CigarID: c.CigarID, ID: c.ID, Brand: c.Brand, Name: c.Name, Confidence: round3(c.Confidence), Evidence: c.Evidence}
}

func convert(cs []identifiedCigar) []matchedCigar {
	out := make([]matchedCigar, len(cs))
	for i, c := range cs {
		out[i] = c.spec()
	}
	return out
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
