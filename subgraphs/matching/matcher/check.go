package matcher

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
)

// The rules of matching's requests live here, with the work they guard: the
// shim asks for a request's price (FingerprintPrice, IdentifyPrice), which
// checks it, before it holds any credits, and the work checks again for any
// other caller.

// Codes of the refusals of a request's fields (matching.Refusal).
const (
	CodeInvalidImageURLs       = "invalid_image_urls"
	CodeInvalidPrompt          = "invalid_prompt"
	CodeInvalidSuggestionLimit = "invalid_suggestion_limit"
	CodeInvalidResearchMode    = "invalid_research_mode"
	CodeInvalidResearchProfile = "invalid_research_profile"
	CodeInvalidLimit           = "invalid_limit"
)

// PriceFingerprint is the fingerprint's price per photo, in credits.
const PriceFingerprint = 1

// FingerprintPrice checks a fingerprint request's photos (1 to 8 well-formed
// references) and returns its price.
func (m *Matcher) FingerprintPrice(urls []string) (int64, error) {
	if err := m.Fetch.Check(urls); err != nil {
		return 0, err
	}
	return int64(len(urls)) * PriceFingerprint, nil
}

// IdentifyPrice checks an identify request and returns the most it can cost:
// what is held before it works.
func (m *Matcher) IdentifyPrice(in IdentifyInput) (int64, error) {
	if err := m.checkIdentify(in); err != nil {
		return 0, err
	}
	if in.Profile == identify.Thorough {
		if m.Model != nil {
			return PriceThorough + PriceModel, nil
		}
		return PriceThorough, nil
	}
	return PriceQuick, nil
}

// forceHint ends the refusals of identify's images: a client that has no
// photo may identify from the prompt alone.
const forceHint = " (or set force: true to identify from the prompt alone)"

func (m *Matcher) checkIdentify(in IdentifyInput) error {
	switch {
	case len(in.ImageURLs) > 0 || !in.Force:
		if err := m.Fetch.Check(in.ImageURLs); err != nil {
			if in.Force {
				return err
			}
			return withHint(err, forceHint)
		}
	case strings.TrimSpace(in.Prompt) == "":
		return matching.Refuse(CodeInvalidPrompt, "with force and no image, give a prompt that names the cigar")
	}
	switch {
	case utf8.RuneCountInString(in.Prompt) > identify.MaxPrompt:
		return matching.Refuse(CodeInvalidPrompt, "prompt is longer than %d characters", identify.MaxPrompt)
	case in.Limit < 1 || in.Limit > identify.MaxSuggestions:
		return matching.Refuse(CodeInvalidSuggestionLimit, "suggestionLimit must be a whole number from 1 to %d", identify.MaxSuggestions)
	case in.Mode != identify.Auto && in.Mode != identify.OpenWorld && in.Mode != identify.CatalogGuided:
		return matching.Refuse(CodeInvalidResearchMode, "researchMode must be %s, %s or %s", identify.Auto, identify.OpenWorld, identify.CatalogGuided)
	case in.Profile != identify.Quick && in.Profile != identify.Thorough:
		return matching.Refuse(CodeInvalidResearchProfile, "researchProfile must be %s or %s", identify.Quick, identify.Thorough)
	}
	return nil
}

// RecognizeLimit is the number of candidates recognize answers: limit, or
// the default when it is nil.
func RecognizeLimit(limit *int) (int, error) {
	if limit == nil {
		return recognize.DefaultLimit, nil
	}
	if *limit < 1 || *limit > recognize.MaxLimit {
		return 0, matching.Refuse(CodeInvalidLimit, "limit must be a whole number from 1 to %d", recognize.MaxLimit)
	}
	return *limit, nil
}

// withHint adds hint to the image intake's refusal of the number of images.
func withHint(err error, hint string) error {
	var fe *imagefetch.Error
	if errors.As(err, &fe) && fe.Code == imagefetch.CodeInvalidURLs {
		return &imagefetch.Error{Code: fe.Code, Message: fe.Message + hint}
	}
	return err
}
