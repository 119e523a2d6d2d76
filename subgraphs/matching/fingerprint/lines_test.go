package fingerprint

import (
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// siblingEvidence renders two lines of one brand sharing a design (only the
// line's name differs) as flat evidence, and a third of another brand.
func siblingEvidence(t *testing.T) (a, b, other *Fingerprint, da, db bandart.Design) {
	t.Helper()
	base := bandart.DesignFor("Casa Quetzal", "")
	da, db = base, base
	da.Line, db.Line = "Reserva", "Lancero Especial"
	ev := func(d bandart.Design) *Fingerprint {
		fp, err := NewEvidence(bandart.Render(d, 800), Label{Brand: d.Brand, Line: d.Line}, Options{Flat: true})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	o := bandart.DesignFor("Valle Dorado", "Maduro")
	return ev(da), ev(db), ev(o), da, db
}

func TestLineMask(t *testing.T) {
	a, b, other, da, db := siblingEvidence(t)
	if NewLineMask([]*Fingerprint{a}) != nil {
		t.Fatal("a mask learned from one line")
	}
	if NewLineMask([]*Fingerprint{a, a}) != nil {
		t.Fatal("a mask learned from identical designs: nothing tells them apart")
	}
	m := NewLineMask([]*Fingerprint{a, b})
	if m == nil {
		t.Fatal("no mask for two lines")
	}
	// A render of each line is nearer its own line where the two differ,
	// and about one line-distance from the other.
	for i, d := range []bandart.Design{da, db} {
		q, err := Compute(bandart.Render(d, 640), Options{Flat: true})
		if err != nil {
			t.Fatal(err)
		}
		dist := m.Distances(q, []*Fingerprint{a, b})
		if dist[i] >= dist[1-i] || dist[1-i] < 0.3 {
			t.Errorf("%s: distances %.3f (to %s) and %.3f (to %s)", d.Line, dist[0], da.Line, dist[1], db.Line)
		}
	}
	// Evidence without the measures (another format's) is infinitely far.
	bare := *other
	bare.Vector = nil
	if d := m.Distances(a, []*Fingerprint{&bare}); d[0] < 1e9 {
		t.Errorf("distance to evidence without a vector: %v", d[0])
	}
}

// TestLineText: the brand's name read on a band reads none of its lines'
// own words; the line's own words tell them apart.
func TestLineText(t *testing.T) {
	a, b, _, _, _ := siblingEvidence(t)
	for _, c := range []struct {
		read           string
		aLine, bLine   float64 // at least / at most
		aAhead, sameAB bool
	}{
		{read: "CASA QUETZAL", sameAB: true},
		{read: "CASA QUETZAL RESERVA", aLine: 1, aAhead: true},
		{read: "QUETZAI RESERVA", aLine: 0.8, aAhead: true},
		{read: "RESERVA", aLine: 1, aAhead: true},
	} {
		q := *a
		q.Label = nil
		q.Typography.Text = c.read
		sa, sb := Compare(&q, a), Compare(&q, b)
		switch {
		case !sa.TextUsed || !sa.LineWords || !sb.LineWords:
			t.Errorf("%q: text not used (%+v, %+v)", c.read, sa, sb)
		case c.sameAB && (sa.LineText != 0 || sb.LineText != 0):
			t.Errorf("%q: the brand alone reads a line: %+v, %+v", c.read, sa, sb)
		case c.aAhead && (sa.LineText < c.aLine || sa.LineText-sb.LineText < 0.3 || sa.Text <= sb.Text):
			t.Errorf("%q: line text %.2f vs %.2f, text %.2f vs %.2f", c.read, sa.LineText, sb.LineText, sa.Text, sb.Text)
		}
	}
}
