package recognize_test

import (
	"encoding/json"
	"fmt"
	"image"
	"testing"

	"github.com/vitolahq/vitola/internal/parallel"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
)

// demoEvidence is the committed demo evidence (IDs evd_demo000...), and the
// catalog's description of every cigar it names.
func demoEvidence(tb testing.TB) ([]*matching.Evidence, map[string]identify.Cigar, []evidence.DemoRecord) {
	tb.Helper()
	recs, err := evidence.Demo()
	if err != nil {
		tb.Fatal(err)
	}
	cigars := map[string]identify.Cigar{}
	var ev []*matching.Evidence
	for i, r := range recs {
		ev = append(ev, &matching.Evidence{ID: fmt.Sprintf("evd_demo%03d", i), CigarID: r.CigarID, Fingerprint: r.Fingerprint})
		cigars[r.CigarID] = identify.Cigar{ID: r.CigarID, Brand: r.Brand, Name: r.Line}
	}
	return ev, cigars, recs
}

// flatBand is a flat render of a band to add as evidence of a cigar.
type flatBand struct {
	cigar  identify.Cigar
	render func() image.Image
}

// flatEvidence describes the bands as evidence (evd_ and the cigar's ID),
// as `vitola evidence add --flat` does, and adds their cigars to cigars.
func flatEvidence(tb testing.TB, bands []flatBand, ocr fingerprint.OCR, cigars map[string]identify.Cigar) []*matching.Evidence {
	tb.Helper()
	out := make([]*matching.Evidence, len(bands))
	parallel.Each(len(bands), func(i int) {
		b := bands[i]
		fp, err := evidence.Describe(b.render(), fingerprint.Label{Brand: b.cigar.Brand, Line: b.cigar.Name}, true, ocr)
		if err != nil {
			panic(err)
		}
		raw, _ := json.Marshal(fp)
		out[i] = &matching.Evidence{ID: "evd_" + b.cigar.ID, CigarID: b.cigar.ID, Fingerprint: raw}
	})
	for _, b := range bands {
		cigars[b.cigar.ID] = b.cigar
	}
	return out
}
