// Package identify decides which catalog cigar a user's photos (and words)
// show, from up to three kinds of evidence: the band's image evidence
// (recognition), text (the band's OCR and the user's prompt, resolved against
// the catalog), and, when configured, a vision model. It names a match only
// when the evidence is confident and agrees; otherwise it returns suggestions
// for the user to confirm, never silently the first.
package identify

import (
	"math"
	"sort"
	"strings"

	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// Modes: which answers may be given.
const (
	// Auto answers from the catalog, and reports what was read from the band
	// when the catalog has no candidate at all.
	Auto = "auto"
	// OpenWorld may report a cigar that is not in the catalog: when nothing in
	// the catalog is a match, it reports what was read from the band.
	OpenWorld = "open_world"
	// CatalogGuided answers only from the catalog.
	CatalogGuided = "catalog_guided"
)

// Profiles: how much evidence is gathered.
const (
	// Quick uses the band's image evidence and the prompt.
	Quick = "quick"
	// Thorough also reads the band's text (OCR) and resolves it through the
	// catalog, and asks the vision model when one is configured and the rest
	// is not conclusive.
	Thorough = "thorough"
)

// Input limits (the spec's).
const (
	MaxPrompt      = 2000
	MaxSuggestions = 10
)

// Statuses of a result.
const (
	Matched     = "matched"
	Suggestions = "suggestions"
	OpenWorldID = "open_world"
	NoMatch     = "no_match"
)

// Evidence kinds behind a candidate.
const (
	EvidenceCombined = "combined"
	EvidenceImage    = "image"
	EvidenceText     = "text"
	EvidenceModel    = "model"
)

// Cigar is a catalog cigar as results show it.
type Cigar struct {
	ID     string
	Number int
	Brand  string
	Name   string
}

// ImageCandidate is a recognition candidate (score 0..1).
type ImageCandidate struct {
	CigarID string
	Score   float64
	// LineText is how much of the candidate's line's own words (not the
	// brand's) the band's OCR read, 0..1; LineWords says whether there were
	// such words and a reading (fingerprint.Scores.LineText).
	LineText  float64
	LineWords bool
	// Inliers is how many of the band's keypoints one placement of the
	// candidate's evidence explains (views averaged); Keyed says whether
	// keypoints were compared at all (evidence of "vitola-band-2" has
	// none, and is decided by Score).
	Inliers float64
	Keyed   bool
}

// TextResult is the catalog's resolution of the text: candidates best first,
// and whether the first is clearly the one.
type TextResult struct {
	Candidates []Cigar
	Resolved   bool
}

// Request is the gathered evidence.
type Request struct {
	Mode  string
	Limit int
	// Image holds recognition candidates (nil when no photos were given).
	Image []ImageCandidate
	// Text is the resolution of the prompt and OCR text (nil without text).
	Text *TextResult
	// Prompt says the text includes what the user typed. Text the catalog
	// could not resolve is a hint, not a claim, unless the user typed it:
	// OCR's reading of a band is already weighed in the image scores.
	Prompt bool
	// TextRead is the band's OCR text, for open-world answers.
	TextRead string
	// Model is the vision model's answer resolved in the catalog (nil when no
	// model was asked or it named nothing the catalog has).
	Model *Cigar
	// Cigars describes every image candidate (the catalog owns them).
	Cigars map[string]Cigar
}

// Candidate is a cigar with the confidence the evidence gives it.
type Candidate struct {
	Cigar
	Confidence float64
	Evidence   string
}

// OpenWorldReading is what was read from a band the catalog does not know.
type OpenWorldReading struct {
	Text string
}

// Result is the decision.
type Result struct {
	Status      string
	Match       *Candidate
	Suggestions []Candidate
	// Pending are candidates only one kind of evidence supports while the
	// other kind was there and disagreed: they await the user's confirmation.
	Pending        []Candidate
	OpenWorld      *OpenWorldReading
	Source         string
	CandidateCount int
	Reason         string
}

// CombinedMatch is the confidence a cigar both kinds of evidence support
// needs. An image-only match follows fingerprint.Matched, the rule the
// recognition benchmark calibrates.
var CombinedMatch = 0.85

// textScore turns a text candidate's rank into a score: a resolved first
// candidate is certain; others fade with rank.
func textScore(rank int, resolved bool) float64 {
	if rank == 0 && resolved {
		return 1
	}
	return max(0.2, 0.6-0.1*float64(rank))
}

type tally struct {
	cigar       Cigar
	image, text float64
	hasImage    bool
	hasText     bool
	model       bool
}

// Decide weighs the evidence.
func Decide(r Request) Result {
	byID := map[string]*tally{}
	var order []string
	get := func(c Cigar) *tally {
		t, ok := byID[c.ID]
		if !ok {
			t = &tally{cigar: c}
			byID[c.ID] = t
			order = append(order, c.ID)
		}
		return t
	}
	// Evidence of a cigar the catalog no longer has is dropped before
	// anything is decided, so it can neither win nor stand as a runner-up.
	known := make([]ImageCandidate, 0, len(r.Image))
	for _, ic := range r.Image {
		if _, ok := r.Cigars[ic.CigarID]; ok {
			known = append(known, ic)
		}
	}
	r.Image = known
	for _, ic := range r.Image {
		t := get(r.Cigars[ic.CigarID])
		t.image, t.hasImage = max(t.image, ic.Score), true
	}
	if r.Text != nil {
		// OCR the catalog could not resolve is a hint at half weight: noise
		// resolves to something, and it must not rank above what the photo
		// looks like, nor lift a candidate to a match.
		weight := 1.0
		if !r.Text.Resolved && !r.Prompt {
			weight = 0.5
		}
		// Unresolved text that names one brand (a brand typed, a band's
		// brand read) lists its lines in the catalog's order, which says
		// nothing of which line the photo shows: each gets the first's
		// score, and the photo orders them.
		oneBrand := !r.Text.Resolved && sameBrand(r.Text.Candidates)
		for i, c := range r.Text.Candidates {
			rank := i
			if oneBrand {
				rank = 0
			}
			t := get(c)
			t.text, t.hasText = max(t.text, weight*textScore(rank, r.Text.Resolved)), true
		}
		// Such text confirms the brand, not a line: the catalog lists a few
		// of the brand's cigars (any line, any vitola), and the line the
		// photo shows must not fall behind those it happens to list. Every
		// cigar of the brand the photo ranks gets the same score. (Typing
		// the brand put a bandgen medium photo's line first 85% of the time
		// against 95% without it.)
		if oneBrand {
			brand := r.Text.Candidates[0].Brand
			for _, ic := range r.Image {
				if c := r.Cigars[ic.CigarID]; c.Brand == brand {
					t := get(c)
					t.text, t.hasText = max(t.text, weight*textScore(0, false)), true
				}
			}
		}
	}
	if r.Model != nil {
		get(*r.Model).model = true
	}
	haveImage, haveText := len(r.Image) > 0, r.Text != nil && len(r.Text.Candidates) > 0
	disagree := haveImage && haveText && textDisagrees(r)
	res := Result{CandidateCount: len(order), Source: source(haveImage, haveText, r.Model != nil)}

	cands := make([]Candidate, 0, len(order))
	for _, id := range order {
		t := byID[id]
		c := Candidate{Cigar: t.cigar}
		switch {
		case t.hasImage && t.hasText:
			c.Confidence, c.Evidence = 1-(1-t.image)*(1-t.text), EvidenceCombined
		case t.hasImage:
			c.Confidence, c.Evidence = t.image, EvidenceImage
		case t.hasText:
			c.Confidence, c.Evidence = t.text*0.9, EvidenceText
		}
		if t.model {
			// A model's word is one more witness, never the only one.
			c.Confidence = 1 - (1-c.Confidence)*0.5
			if c.Evidence == "" {
				c.Confidence, c.Evidence = modelOnly(), EvidenceModel
			}
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		return cands[i].Confidence > cands[j].Confidence || (cands[i].Confidence == cands[j].Confidence && cands[i].ID < cands[j].ID)
	})

	var match *Candidate
	near := haveImage && linesClose(r)
	if len(cands) > 0 {
		top := cands[0]
		second := 0.0
		if len(cands) > 1 {
			second = cands[1].Confidence
		}
		t := byID[top.ID]
		// The photo's best candidate, whatever text or model added to others.
		var pic *Candidate
		for i := range cands {
			if haveImage && cands[i].ID == imageTop(r.Image) {
				pic = &cands[i]
			}
		}
		switch {
		// Only text the catalog resolved to one cigar agrees: an unresolved
		// list (a brand's lines, a vague prompt) would lift whichever of
		// two close photos it happens to list first.
		// When two of the brand's lines are close, OCR resolved to one of
		// them agrees only if it read that line's own words: the brand's
		// name, on every line of the brand, would confirm whichever the
		// photo happened to rank first.
		case t.hasImage && t.hasText && r.Text.Resolved && top.Confidence >= CombinedMatch && top.Confidence-second >= 0.05 && imageTop(r.Image) == top.ID && (!near || r.Prompt):
			match, res.Reason = &top, "image_and_text_agree"
		// A decisive photo names the line, unless text disagrees or the
		// model names another: text that does not disagree (a brand, a
		// hint) cannot tell the brand's lines apart better than the photo.
		// Nor can a photo whose best line is close to another of the brand.
		case pic != nil && !disagree && !near && imageDecisive(r.Image, r.Cigars) && (r.Model == nil || byID[pic.ID].model):
			match, res.Reason = pic, "image_decisive"
		case !haveImage && haveText && r.Text.Resolved && top.Evidence == EvidenceText:
			match, res.Reason = &top, "text_resolved"
		case disagree:
			res.Reason = "image_and_text_disagree"
		case near:
			// The brand is found, its line is not: the brand's lines lead
			// the suggestions, for the user to choose among.
			res.Reason = "lines_close"
			brandFirst(cands, r.Cigars[imageTop(r.Image)].Brand)
		case len(cands) > 0:
			res.Reason = "not_confident"
			if haveImage && brandLeads(r.Image, r.Cigars) {
				brandFirst(cands, r.Cigars[imageTop(r.Image)].Brand)
			}
		}
	}
	for _, c := range cands {
		if match != nil && c.ID == match.ID {
			continue
		}
		// When image and text disagree, a candidate only one supports
		// awaits confirmation.
		if disagree && c.Evidence != EvidenceCombined {
			res.Pending = append(res.Pending, c)
		} else {
			res.Suggestions = append(res.Suggestions, c)
		}
	}
	res.Suggestions = res.Suggestions[:min(len(res.Suggestions), r.Limit)]
	res.Pending = res.Pending[:min(len(res.Pending), r.Limit)]

	read := strings.TrimSpace(r.TextRead)
	switch {
	case match != nil:
		res.Status, res.Match = Matched, match
	case read != "" && (r.Mode == OpenWorld || (r.Mode == Auto && len(cands) == 0)):
		res.Status, res.OpenWorld = OpenWorldID, &OpenWorldReading{Text: read}
		if len(cands) == 0 {
			res.Reason = "not_in_catalog"
		}
	case len(res.Suggestions) > 0 || len(res.Pending) > 0:
		res.Status = Suggestions
	default:
		res.Status, res.Reason = NoMatch, "no_candidates"
	}
	return res
}

// The decision rule on keypoints: the photo's best candidate names its
// brand when one placement of its evidence explains at least MatchInliers
// of the band's keypoints and clearly more than the best candidate of
// another brand does: BrandRatio times as many, and Sigmas standard
// deviations more (counting inliers as Poisson: t-o >= Sigmas*sqrt(t+o)).
// It names its line when it also explains clearly more than the best other
// line of its brand (LineRatio times as many, and Sigmas deviations more),
// or when the band's OCR read its line's own words: lines of one brand
// share most keypoints and differ by those of the line's own name and
// marks. The ratios guard many inliers, the deviations few: 20 against 12
// is a ratio of 1.7 but within chance. Calibrated on held-out photos
// (TestKeypointRule: 1,140 answers, both profiles, two renderers): each
// value at its loosest with no wrong match, the others as here, was 6
// inliers, a brand ratio of 1, a line ratio of 1 and 2.5 deviations; these
// leave a margin, most on the deviations, which the calibration found the
// tightest (at 2 it made wrong matches).
var (
	MatchInliers = 20.0
	BrandRatio   = 2.0
	LineRatio    = 1.3
	Sigmas       = 3.0
)

// clearlyMore says whether t inliers are clearly more than s, by ratio
// (at least s at 1) and by sigmas deviations.
func clearlyMore(t, s, ratio, sigmas float64) bool {
	return t >= ratio*max(s, 1) && t-s >= sigmas*math.Sqrt(t+s)
}

// SiblingMargin is the lead the photo's best line needs over the best other
// line of the same brand to be named, when its evidence has no keypoints
// (compared by Score), unless the band's OCR read the best line's own words
// and not the other's: lines of one brand often share a design, and a
// photo tells them apart less surely than it tells brands apart.
// Calibrated on held-out sibling lines before keypoints.
var SiblingMargin = 0.09

// linesClose says whether the photo's best candidate and the best candidate
// of another line of its brand are too close to name either (not
// clearlyMore by LineRatio; without keypoints, within SiblingMargin), the
// band's text not naming the first's line rather than the second's.
func linesClose(r Request) bool {
	if len(r.Image) < 2 {
		return false
	}
	top := r.Image[0]
	if top.Keyed && !brandFound(r.Image, r.Cigars) {
		return false // nothing is found, not even the brand
	}
	tc := r.Cigars[top.CigarID]
	for _, c := range r.Image[1:] {
		cc := r.Cigars[c.CigarID]
		if cc.Brand != tc.Brand || cc.Name == tc.Name {
			continue
		}
		close := top.Score-c.Score < SiblingMargin
		if top.Keyed {
			close = !clearlyMore(top.Inliers, c.Inliers, LineRatio, Sigmas)
		}
		return close && !lineRead(top, c)
	}
	return false
}

// lineRead says whether the OCR read the line of a rather than that of b:
// most of a's own words, clearly more of them than of b's.
func lineRead(a, b ImageCandidate) bool {
	return a.LineWords && a.LineText >= 0.8 && (!b.LineWords || a.LineText-b.LineText >= 0.3)
}

// brandFirst orders the candidates of brand first, each part keeping its
// order.
func brandFirst(cands []Candidate, brand string) {
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Brand == brand && cands[j].Brand != brand })
}

// modelOnly is the confidence of a candidate only the vision model names:
// 0.6, above photos that merely look alike (a score from colours and layout
// alone is at most half their total) and under photos whose keypoints
// name the band (fifty inliers score 0.6 on their own); for evidence of
// the format before keypoints, just under its decision threshold.
func modelOnly() float64 { return fingerprint.MatchThreshold - 0.02 }

func imageTop(cs []ImageCandidate) string {
	if len(cs) == 0 {
		return ""
	}
	return cs[0].CigarID
}

func textTop(t *TextResult) string {
	if t == nil || len(t.Candidates) == 0 {
		return ""
	}
	return t.Candidates[0].ID
}

// textDisagrees says whether the text contradicts the image's best
// candidate. Text the catalog resolved to another cigar does. Unresolved
// text does only when the user typed it and the catalog narrowed it to one
// brand that is not the image's ("padron" under a photo of an Oliva band); a
// vague prompt ("the maduro one") does not. OCR that reads part of a band
// (its brand, a few letters, noise) is a hint, and it already counts in the
// image scores.
func textDisagrees(r Request) bool {
	top := imageTop(r.Image)
	if top == textTop(r.Text) {
		return false
	}
	if r.Text.Resolved {
		return true
	}
	if !r.Prompt {
		return false
	}
	return sameBrand(r.Text.Candidates) && r.Text.Candidates[0].Brand != r.Cigars[top].Brand
}

// imageDecisive applies the recognition decision rule: on keypoints, the
// best candidate's inliers name its brand (brandFound; its line is
// linesClose's); without them (evidence of an older format),
// a high score and a clear lead over the best candidate of another line
// (fingerprint.Matched).
func imageDecisive(cs []ImageCandidate, cigars map[string]Cigar) bool {
	if len(cs) == 0 {
		return false
	}
	top := cigars[cs[0].CigarID]
	if cs[0].Keyed {
		return brandFound(cs, cigars)
	}
	second := 0.0
	for _, c := range cs[1:] {
		if cigars[c.CigarID].Brand == top.Brand && cigars[c.CigarID].Name == top.Name {
			continue
		}
		second = c.Score
		break
	}
	return fingerprint.Matched(cs[0].Score, second)
}

// brandFound says whether the photo's best candidate's keypoints name its
// brand: MatchInliers, and clearly more than the best candidate of another
// brand (by BrandRatio).
func brandFound(cs []ImageCandidate, cigars map[string]Cigar) bool {
	t, other := brandLead(cs, cigars)
	return t >= MatchInliers && clearlyMore(t, other, BrandRatio, Sigmas)
}

// brandLead is the inliers of the photo's best candidate, and the most of
// a candidate of another brand.
func brandLead(cs []ImageCandidate, cigars map[string]Cigar) (top, other float64) {
	brand := cigars[cs[0].CigarID].Brand
	for _, c := range cs[1:] {
		if cigars[c.CigarID].Brand != brand {
			other = max(other, c.Inliers)
		}
	}
	return cs[0].Inliers, other
}

// sameBrand says whether the cigars are all of one brand.
func sameBrand(cs []Cigar) bool {
	for _, c := range cs {
		if c.Brand != cs[0].Brand {
			return false
		}
	}
	return len(cs) > 0
}

func source(image, text, model bool) string {
	switch {
	case image && text, model && (image || text):
		return EvidenceCombined
	case image:
		return EvidenceImage
	case text:
		return EvidenceText
	case model:
		return EvidenceModel
	}
	return "none"
}

// The brand leads, not found: when nothing is matched and the photo's best
// candidate explains at least LeadInliers of its keypoints, LeadRatio times
// and LeadSigmas deviations more than the best candidate of another brand,
// the brand's lines lead the suggestions. Looser than the rule that names a
// brand (MatchInliers, BrandRatio, Sigmas): it orders, it never names. A
// blurred or half-covered band often keeps too few keypoints for its line,
// and its best candidate is then another line of its brand; the line it
// shows, with fewer inliers than other brands' noise, fell out of the first
// five. Recognition scores the leading brand's other lines for this
// (recognize: siblings). On held-out photos (126 of bandgen's at each of
// the medium and strong levels, 32 of bandart's) neither these values nor
// others from 6 inliers, a ratio of 1 and no deviation to 8, 2 and 1.5
// changed a line's place among the first five, but one (6, 1, 0), and none
// named a wrong cigar: the lines of a brand the photo leads with are
// mostly among its first candidates already. It keeps them together.
var (
	LeadInliers = 10.0
	LeadRatio   = 1.5
	LeadSigmas  = 1.0
)

// brandLeads says whether the photo's best candidate's brand leads (see
// LeadInliers).
func brandLeads(cs []ImageCandidate, cigars map[string]Cigar) bool {
	if len(cs) == 0 || !cs[0].Keyed {
		return false
	}
	t, other := brandLead(cs, cigars)
	return t >= LeadInliers && clearlyMore(t, other, LeadRatio, LeadSigmas)
}
