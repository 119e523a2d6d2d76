package matcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// Prices of identify, in credits (docs/guides/image-matching.md, /docs): the held price is the most a
// request can cost; the charge is what it used.
const (
	PriceQuick    = 2
	PriceThorough = 5
	// PriceModel is added when the vision model was asked.
	PriceModel = 5
)

// Catalog is what identify asks the catalog subgraph, which owns cigars.
type Catalog interface {
	// Resolve ranks catalog cigars for imperfect text.
	Resolve(ctx context.Context, text string, limit int) (*identify.TextResult, error)
	// Cigars describes cigars by public ID (unknown IDs are left out).
	Cigars(ctx context.Context, ids []string) (map[string]identify.Cigar, error)
}

// Model is a vision model that names the cigar in photos: a vendor outside the
// platform, off unless configured.
type Model interface {
	Identify(ctx context.Context, imageURLs []string, prompt string) (brand, name string, err error)
}

// IdentifyInput is an identify request.
type IdentifyInput struct {
	ImageURLs []string
	Prompt    string
	Limit     int
	Mode      string
	Profile   string
	// Force identifies from the prompt alone: images become optional.
	Force bool
}

// Identification is identify's answer and what it cost.
type Identification struct {
	identify.Result
	ImageCount int
	ModelUsed  bool
	Cost       int64
}

// recognitionDepth is how many image candidates identify weighs.
const recognitionDepth = 10

// maxResolveText is the catalog's resolve limit, in characters.
const maxResolveText = 200

// Identify gathers the evidence the profile asks for and decides.
func (m *Matcher) Identify(ctx context.Context, in IdentifyInput) (*Identification, error) {
	if err := m.checkIdentify(in); err != nil {
		return nil, err
	}
	if m.Catalog == nil {
		return nil, errors.New("identify needs the catalog: start matching with --subgraph-url catalog=http://HOST:PORT/graphql")
	}
	out := &Identification{ImageCount: len(in.ImageURLs), Cost: PriceQuick}
	if in.Profile == identify.Thorough {
		out.Cost = PriceThorough
	}
	req := identify.Request{Mode: in.Mode, Limit: in.Limit, Prompt: strings.TrimSpace(in.Prompt) != ""}
	var read []string
	if len(in.ImageURLs) > 0 {
		views, err := m.views(ctx, in.ImageURLs, in.Profile == identify.Thorough)
		if err != nil {
			return nil, err
		}
		cands, err := m.Evidence.Get().Recognize(views, recognitionDepth)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(cands))
		for i, c := range cands {
			req.Image = append(req.Image, identify.ImageCandidate{CigarID: c.CigarID, Score: c.Score, LineText: c.Scores.LineText, LineWords: c.Scores.LineWords, Inliers: c.Scores.Inliers, Keyed: c.Keyed})
			ids[i] = c.CigarID
		}
		if req.Cigars, err = m.Catalog.Cigars(ctx, ids); err != nil {
			return nil, err
		}
		for _, v := range views {
			if t := strings.TrimSpace(v.Typography.Text); t != "" {
				read = append(read, t)
			}
		}
	}
	req.TextRead = strings.Join(read, " / ")
	var err error
	if req.Text, err = m.resolveText(ctx, strings.TrimSpace(in.Prompt), strings.Join(read, " ")); err != nil {
		return nil, err
	}
	out.Result = identify.Decide(req)
	// The model is asked only when the rest is not conclusive, and only in the
	// thorough profile: it is the slowest and dearest witness.
	if out.Status != identify.Matched && in.Profile == identify.Thorough && m.Model != nil && len(in.ImageURLs) > 0 {
		// A vendor that fails is not charged for, and not counted as used.
		brand, name, err := m.Model.Identify(ctx, in.ImageURLs, in.Prompt)
		if err != nil {
			m.Log.Warn().Err(err).Msg("the vision model did not answer; identify goes on without it")
		}
		if err == nil {
			out.ModelUsed, out.Cost = true, out.Cost+PriceModel
		}
		if err == nil && strings.TrimSpace(brand+name) != "" {
			if res, err := m.Catalog.Resolve(ctx, clip(brand+" "+name, maxResolveText), 1); err == nil && res.Resolved && len(res.Candidates) > 0 {
				req.Model = &res.Candidates[0]
				if req.Cigars == nil {
					req.Cigars = map[string]identify.Cigar{}
				}
				out.Result = identify.Decide(req)
			}
		}
	}
	return out, nil
}

// resolveText resolves the prompt and the OCR reading in the catalog (nil
// when there is neither). The prompt is resolved on its own: OCR often reads
// noise among a band's decorations, and noise appended to the user's words
// can lead the resolver astray. Prompt and reading together are used only
// when the catalog resolves them to one cigar (a prompt "padron" and a
// reading "1964 ANNIVERSARY").
func (m *Matcher) resolveText(ctx context.Context, prompt, read string) (*identify.TextResult, error) {
	resolve := func(text string) (*identify.TextResult, error) {
		if text = clip(strings.TrimSpace(text), maxResolveText); utf8.RuneCountInString(text) < 2 {
			return nil, nil
		}
		return m.Catalog.Resolve(ctx, text, 5)
	}
	if prompt == "" || read == "" {
		return resolve(prompt + read)
	}
	both, err := resolve(prompt + " " + read)
	if err != nil || (both != nil && both.Resolved) {
		return both, err
	}
	return resolve(prompt)
}

// views fetches and describes the photos, concurrently; OCR runs only when
// asked (the thorough profile).
func (m *Matcher) views(ctx context.Context, urls []string, ocr bool) ([]*fingerprint.Fingerprint, error) {
	opts := fingerprint.Options{Context: ctx}
	if ocr {
		opts.OCR = m.OCR
	}
	// Each photo is described while it holds its share of the fetcher's
	// decode budget, and dropped after: many large photos at once cannot
	// exhaust memory.
	views := make([]*fingerprint.Fingerprint, len(urls))
	err := m.Fetch.FetchEach(ctx, urls, func(i int, img *imagefetch.Image) error {
		v, err := fingerprint.Compute(img.Image, opts)
		switch {
		case errors.Is(err, fingerprint.ErrBlank):
			return noBand(i, "the photo is blank (nearly one colour): there is no band in it; send a photo of the cigar's band")
		case errors.Is(err, fingerprint.ErrEmpty):
			return noBand(i, ErrNoBand.Error())
		}
		views[i] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return views, nil
}

// noBand is ErrNoBand for photo i, its message beginning with the field it
// is about, as the image intake's refusals do ("imageUrls[2]: ...").
func noBand(i int, msg string) error { return noBandError(fmt.Sprintf("imageUrls[%d]: %s", i, msg)) }

type noBandError string

func (e noBandError) Error() string        { return string(e) }
func (e noBandError) Is(target error) bool { return target == ErrNoBand }

// clip cuts text to at most n characters, at a word boundary when it can.
func clip(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > 0 {
		return string(r)[:i]
	}
	return string(r)
}
