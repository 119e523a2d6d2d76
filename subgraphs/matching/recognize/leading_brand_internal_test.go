package recognize

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// TestBrandSiblings: in the second look, the lines of the best
// candidate's brand are scored even when neither shortlist found them
// (here a line of the brand whose band looks like none of the others), and
// only those.
func TestBrandSiblings(t *testing.T) {
	recs, err := evidence.Demo()
	if err != nil {
		t.Fatal(err)
	}
	var ev []*matching.Evidence
	for i, r := range recs {
		ev = append(ev, &matching.Evidence{ID: fmt.Sprintf("evd_demo%03d", i), CigarID: r.CigarID, Fingerprint: r.Fingerprint})
	}
	shown := recs[40]
	add := func(id, brand string, d bandart.Design) {
		fp, err := evidence.Describe(bandart.Render(d, 800), fingerprint.Label{Brand: brand, Line: d.Line}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(fp)
		ev = append(ev, &matching.Evidence{ID: "evd_" + id, CigarID: id, Fingerprint: raw})
	}
	unlike := bandart.DesignFor("Nothing Alike", "Plain")
	add("cig_unlike", shown.Brand, unlike)
	add("cig_other", "Nothing Alike", unlike)
	snap := Build(ev)
	fp, err := fingerprint.Compute(bandart.Photo(bandart.Render(bandart.DesignFor(shown.Brand, shown.Line), 800), bandart.Mild, 3), fingerprint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scored := map[string]bool{}
	for _, c := range snap.candidates([]*fingerprint.Fingerprint{fp}, true, map[int]fingerprint.Scores{}) {
		scored[c.CigarID] = true
	}
	if !scored[shown.CigarID] || !scored["cig_unlike"] {
		t.Errorf("scored the photo's line %v, its brand's unlike line %v; want both", scored[shown.CigarID], scored["cig_unlike"])
	}
	if scored["cig_other"] {
		t.Error("the same unlike band of another brand was scored too: it is shortlisted, and the test shows nothing")
	}
}
