package identify_test

import (
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/identify"
)

var (
	exclusivo = identify.Cigar{ID: "cig_a", Number: 1, Brand: "Padrón", Name: "1964 Anniversary Series Exclusivo"}
	natural   = identify.Cigar{ID: "cig_b", Number: 2, Brand: "Padrón", Name: "1964 Anniversary Series Natural Exclusivo"}
	short     = identify.Cigar{ID: "cig_c", Number: 3, Brand: "Arturo Fuente", Name: "Hemingway Short Story"}
	reserve   = identify.Cigar{ID: "cig_d", Number: 4, Brand: "Padrón", Name: "Family Reserve 46 Years"}
	serieV    = identify.Cigar{ID: "cig_e", Number: 5, Brand: "Oliva", Name: "Serie V Double Robusto"}
	cigars    = map[string]identify.Cigar{"cig_a": exclusivo, "cig_b": natural, "cig_c": short, "cig_d": reserve, "cig_e": serieV}
)

func images(scores ...float64) []identify.ImageCandidate {
	ids := []string{"cig_a", "cig_b", "cig_c"}
	out := make([]identify.ImageCandidate, len(scores))
	for i, s := range scores {
		out[i] = identify.ImageCandidate{CigarID: ids[i], Score: s}
	}
	return out
}

// keyed are image candidates compared by keypoints: cigar ID and inliers
// in turn (scores follow the inliers' order).
func keyed(idInliers ...any) []identify.ImageCandidate {
	var out []identify.ImageCandidate
	for i := 0; i < len(idInliers); i += 2 {
		n := idInliers[i+1].(float64)
		out = append(out, identify.ImageCandidate{CigarID: idInliers[i].(string), Score: n / 200, Inliers: n, Keyed: true})
	}
	return out
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name      string
		req       identify.Request
		status    string
		match     string
		evidence  string
		reason    string
		suggested int
		pending   int
		openWorld bool
		// order is the suggestions' IDs, when it matters.
		order []string
	}{
		{name: "a decisive image", req: identify.Request{Image: images(0.82, 0.6, 0.4)},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 2},
		{name: "an image too close to call", req: identify.Request{Image: images(0.82, 0.78)},
			status: identify.Suggestions, reason: "lines_close", suggested: 2},
		{name: "two lines of another brand close behind: the photo's line is named", req: identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_c", Score: 0.82}, {CigarID: "cig_a", Score: 0.74}, {CigarID: "cig_b", Score: 0.73}}},
			status: identify.Matched, match: "cig_c", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 2},
		{name: "a sibling line within the sibling margin: suggestions, the brand's lines first", req: identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_a", Score: 0.82}, {CigarID: "cig_c", Score: 0.76}, {CigarID: "cig_d", Score: 0.75}}},
			status: identify.Suggestions, reason: "lines_close", suggested: 3, order: []string{"cig_a", "cig_d", "cig_c"}},
		{name: "OCR that read the line's own words names it among close lines", req: identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_a", Score: 0.8, LineText: 1, LineWords: true}, {CigarID: "cig_b", Score: 0.74, LineText: 0.5, LineWords: true}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 1},
		{name: "OCR that read words both lines share does not name either", req: identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_a", Score: 0.8, LineText: 1, LineWords: true}, {CigarID: "cig_b", Score: 0.74, LineText: 0.9, LineWords: true}}},
			status: identify.Suggestions, reason: "lines_close", suggested: 2},
		{name: "keypoints: many inliers, another brand's few, no other line", req: identify.Request{Image: keyed("cig_c", 80.0, "cig_a", 10.0)},
			status: identify.Matched, match: "cig_c", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 1},
		{name: "keypoints: another line of the brand nearly as many: the brand's lines first", req: identify.Request{Image: keyed("cig_a", 80.0, "cig_c", 12.0, "cig_d", 70.0)},
			status: identify.Suggestions, reason: "lines_close", suggested: 3, order: []string{"cig_a", "cig_d", "cig_c"}},
		{name: "keypoints: clearly more than the other line", req: identify.Request{Image: keyed("cig_a", 80.0, "cig_d", 40.0, "cig_c", 5.0)},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 2},
		{name: "keypoints: 20 against 12 is within chance", req: identify.Request{Image: keyed("cig_a", 20.0, "cig_d", 12.0)},
			status: identify.Suggestions, reason: "lines_close", suggested: 2},
		{name: "keypoints: the line's own words read name it among close lines", req: identify.Request{Image: []identify.ImageCandidate{
			{CigarID: "cig_a", Score: 0.4, Inliers: 80, Keyed: true, LineText: 1, LineWords: true}, {CigarID: "cig_d", Score: 0.35, Inliers: 75, Keyed: true, LineWords: true}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 1},
		{name: "keypoints: the brand typed lists its lines in the catalog's order; the photo orders them", req: identify.Request{Prompt: true, Image: keyed("cig_a", 80.0, "cig_b", 70.0), Text: &identify.TextResult{Candidates: []identify.Cigar{natural, exclusivo, reserve}}},
			status: identify.Suggestions, reason: "lines_close", suggested: 3, order: []string{"cig_a", "cig_b", "cig_d"}},
		{name: "keypoints: too few inliers name nothing, not even the brand", req: identify.Request{Image: keyed("cig_a", 15.0, "cig_d", 4.0, "cig_c", 2.0)},
			status: identify.Suggestions, reason: "not_confident", suggested: 3},
		{name: "keypoints: a brand that leads but is not found: its lines lead the suggestions", req: identify.Request{Image: keyed("cig_a", 16.0, "cig_c", 7.0, "cig_e", 6.0, "cig_d", 5.0)},
			status: identify.Suggestions, reason: "not_confident", suggested: 4, order: []string{"cig_a", "cig_d", "cig_c", "cig_e"}},
		{name: "keypoints: another brand close behind the first: the photo's order", req: identify.Request{Image: keyed("cig_a", 14.0, "cig_c", 11.0, "cig_d", 5.0)},
			status: identify.Suggestions, reason: "not_confident", suggested: 3, order: []string{"cig_a", "cig_c", "cig_d"}},
		{name: "keypoints: a lead of a few inliers orders nothing", req: identify.Request{Image: keyed("cig_a", 8.0, "cig_c", 3.0, "cig_d", 2.0)},
			status: identify.Suggestions, reason: "not_confident", suggested: 3, order: []string{"cig_a", "cig_c", "cig_d"}},
		{name: "keypoints: another brand close behind", req: identify.Request{Image: keyed("cig_c", 40.0, "cig_a", 25.0)},
			status: identify.Suggestions, reason: "not_confident", suggested: 2},
		{name: "a weak image", req: identify.Request{Image: images(0.5, 0.3)},
			status: identify.Suggestions, reason: "not_confident", suggested: 2},
		{name: "image and text agree", req: identify.Request{Image: images(0.66, 0.5), Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo, natural}, Resolved: true}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceCombined, reason: "image_and_text_agree", suggested: 1},
		{name: "OCR resolved to one of two close lines of a brand, their own words unread, confirms only the brand", req: identify.Request{Image: images(0.66, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo, natural}, Resolved: true}},
			status: identify.Suggestions, reason: "lines_close", suggested: 2},
		{name: "a prompt resolved to one of two close lines names it", req: identify.Request{Prompt: true, Image: images(0.66, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo, natural}, Resolved: true}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceCombined, reason: "image_and_text_agree", suggested: 1},
		{name: "image and text disagree", req: identify.Request{Image: images(0.9, 0.5), Text: &identify.TextResult{Candidates: []identify.Cigar{short}, Resolved: true}},
			status: identify.Suggestions, reason: "image_and_text_disagree", pending: 3},
		{name: "OCR the catalog cannot resolve does not outvote a decisive image", req: identify.Request{Image: images(0.82, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{serieV}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 2},
		{name: "OCR noise beside a weak image: suggestions, the photo's first, none pending", req: identify.Request{Image: images(0.5, 0.3), Text: &identify.TextResult{Candidates: []identify.Cigar{serieV}}},
			status: identify.Suggestions, evidence: identify.EvidenceImage, reason: "not_confident", suggested: 3},
		{name: "an unresolved OCR hint cannot lift a close image to a match", req: identify.Request{Image: images(0.65, 0.62), Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo}}},
			status: identify.Suggestions, evidence: identify.EvidenceCombined, reason: "lines_close", suggested: 2},
		{name: "an unresolved prompt of the image's brand lets the image name the line", req: identify.Request{Prompt: true, Image: images(0.82, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{reserve}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceCombined, reason: "image_decisive", suggested: 2},
		{name: "keypoints: the brand typed lists some of its cigars, not the photo's line; the photo's line still leads", req: identify.Request{Prompt: true, Image: keyed("cig_a", 80.0, "cig_b", 70.0), Text: &identify.TextResult{Candidates: []identify.Cigar{natural, reserve}}},
			status: identify.Suggestions, reason: "lines_close", suggested: 3, order: []string{"cig_a", "cig_b", "cig_d"}},
		{name: "the brand typed, a decisive photo: the photo names the line", req: identify.Request{Prompt: true, Image: images(0.82, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{natural, reserve}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceCombined, reason: "image_decisive", suggested: 2},
		{name: "an unresolved list cannot lift the closer of two photos to a match", req: identify.Request{Prompt: true, Image: images(0.7, 0.66), Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo, natural}}},
			status: identify.Suggestions, evidence: identify.EvidenceCombined, reason: "lines_close", suggested: 2},
		{name: "a vague prompt (candidates of several brands) does not outvote a decisive image", req: identify.Request{Prompt: true, Image: images(0.82, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{serieV, reserve}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 3},
		{name: "an unresolved prompt of another brand holds a decisive image for confirmation", req: identify.Request{Prompt: true, Image: images(0.82, 0.6), Text: &identify.TextResult{Candidates: []identify.Cigar{serieV}}},
			status: identify.Suggestions, reason: "image_and_text_disagree", pending: 3},
		{name: "text alone, resolved (force)", req: identify.Request{Text: &identify.TextResult{Candidates: []identify.Cigar{short, exclusivo}, Resolved: true}},
			status: identify.Matched, match: "cig_c", evidence: identify.EvidenceText, reason: "text_resolved", suggested: 1},
		{name: "text alone, unresolved", req: identify.Request{Text: &identify.TextResult{Candidates: []identify.Cigar{exclusivo, natural}}},
			status: identify.Suggestions, reason: "not_confident", suggested: 2},
		{name: "nothing known, open world", req: identify.Request{Mode: identify.OpenWorld, TextRead: "CASA QUETZAL"},
			status: identify.OpenWorldID, reason: "not_in_catalog", openWorld: true},
		{name: "nothing known, auto reports what was read", req: identify.Request{Mode: identify.Auto, TextRead: "CASA QUETZAL"},
			status: identify.OpenWorldID, reason: "not_in_catalog", openWorld: true},
		{name: "nothing known, catalog only", req: identify.Request{Mode: identify.CatalogGuided, TextRead: "CASA QUETZAL"},
			status: identify.NoMatch, reason: "no_candidates"},
		{name: "weak candidates, auto stays in the catalog", req: identify.Request{Mode: identify.Auto, Image: images(0.5), TextRead: "CASA"},
			status: identify.Suggestions, reason: "not_confident", suggested: 1},
		{name: "weak candidates, open world reports the reading too", req: identify.Request{Mode: identify.OpenWorld, Image: images(0.5), TextRead: "CASA"},
			status: identify.OpenWorldID, reason: "not_confident", suggested: 1, openWorld: true},
		{name: "a decisive image the model contradicts", req: identify.Request{Image: images(0.9, 0.5), Model: &short},
			status: identify.Suggestions, reason: "not_confident", suggested: 3},
		{name: "the model's answer ranks above photos that merely look alike", req: identify.Request{Image: images(0.59, 0.45), Model: &short, Limit: 1},
			status: identify.Suggestions, evidence: identify.EvidenceModel, reason: "not_confident", suggested: 1},
		{name: "evidence of a cigar the catalog dropped cannot win",
			req:    identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_gone", Score: 0.95}, {CigarID: "cig_a", Score: 0.82}, {CigarID: "cig_c", Score: 0.4}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 1},
		{name: "evidence of a cigar the catalog dropped is no runner-up",
			req:    identify.Request{Image: []identify.ImageCandidate{{CigarID: "cig_a", Score: 0.82}, {CigarID: "cig_gone", Score: 0.81}, {CigarID: "cig_c", Score: 0.4}}},
			status: identify.Matched, match: "cig_a", evidence: identify.EvidenceImage, reason: "image_decisive", suggested: 1},
		{name: "suggestions respect the limit", req: identify.Request{Image: images(0.5, 0.4, 0.3), Limit: 2},
			status: identify.Suggestions, reason: "not_confident", suggested: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Cigars = cigars
			if c.req.Mode == "" {
				c.req.Mode = identify.Auto
			}
			if c.req.Limit == 0 {
				c.req.Limit = 5
			}
			r := identify.Decide(c.req)
			if r.Status != c.status || r.Reason != c.reason || len(r.Suggestions) != c.suggested || len(r.Pending) != c.pending || (r.OpenWorld != nil) != c.openWorld {
				t.Fatalf("got %s (%s) with %d suggestions, %d pending, open world %v; want %s (%s), %d, %d, %v",
					r.Status, r.Reason, len(r.Suggestions), len(r.Pending), r.OpenWorld != nil, c.status, c.reason, c.suggested, c.pending, c.openWorld)
			}
			if c.match != "" && (r.Match == nil || r.Match.ID != c.match || r.Match.Evidence != c.evidence) {
				t.Fatalf("match %+v, want %s by %s", r.Match, c.match, c.evidence)
			}
			if c.match == "" && r.Match != nil {
				t.Fatalf("matched %+v, want no match", r.Match)
			}
			if c.match == "" && c.evidence != "" && (len(r.Suggestions) == 0 || r.Suggestions[0].Evidence != c.evidence) {
				t.Fatalf("suggestions %+v, want the first by %s", r.Suggestions, c.evidence)
			}
			if c.order != nil {
				var got []string
				for _, s := range r.Suggestions {
					got = append(got, s.ID)
				}
				if strings.Join(got, " ") != strings.Join(c.order, " ") {
					t.Fatalf("suggestions %v, want %v", got, c.order)
				}
				return
			}
			for i := 1; i < len(r.Suggestions); i++ {
				if r.Suggestions[i].Confidence > r.Suggestions[i-1].Confidence {
					t.Fatal("suggestions not best first")
				}
			}
		})
	}
}
