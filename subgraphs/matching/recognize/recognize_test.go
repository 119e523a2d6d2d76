package recognize_test

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/identify"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
)

// scaledEvidence grows the 224 demo evidence fingerprints to n by jittering
// copies (vector and colours), each copy its own cigar: a catalog of n bands
// that resemble real ones.
func scaledEvidence(tb testing.TB, n int) []*matching.Evidence {
	tb.Helper()
	recs, err := evidence.Demo()
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([]*matching.Evidence, 0, n)
	for i := 0; len(out) < n; i++ {
		r := recs[i%len(recs)]
		var fp fingerprint.Fingerprint
		if err := json.Unmarshal(r.Fingerprint, &fp); err != nil {
			tb.Fatal(err)
		}
		if i >= len(recs) {
			var norm float64
			for d := range fp.Vector {
				fp.Vector[d] += float32(rng.NormFloat64() * 0.05)
				norm += float64(fp.Vector[d]) * float64(fp.Vector[d])
			}
			for d := range fp.Vector {
				fp.Vector[d] /= float32(math.Sqrt(norm))
			}
			for c := range fp.Colors {
				fp.Colors[c].L += rng.NormFloat64() * 3
			}
		}
		raw, _ := json.Marshal(&fp)
		out = append(out, &matching.Evidence{ID: fmt.Sprintf("evd_%06d", i), CigarID: fmt.Sprintf("cig_%06d", i), Fingerprint: raw})
	}
	return out
}

func queryView(tb testing.TB) []*fingerprint.Fingerprint {
	band := bandart.Render(bandart.DesignFor("Padrón", "1964 Anniversary Series"), 600)
	fp, err := fingerprint.Compute(bandart.Photo(band, bandart.Mild, 11), fingerprint.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return []*fingerprint.Fingerprint{fp}
}

func TestRecognizeRanksAndLimits(t *testing.T) {
	snap := recognize.Build(scaledEvidence(t, 600))
	if snap.Len() != 600 || snap.Skipped != 0 {
		t.Fatalf("snapshot of %d, %d skipped", snap.Len(), snap.Skipped)
	}
	got, err := snap.Recognize(queryView(t), 7)
	if err != nil || len(got) != 7 {
		t.Fatalf("recognize: %d %v", len(got), err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			t.Fatal("candidates not best first")
		}
	}
	for _, bad := range []int{0, recognize.MaxLimit + 1} {
		if _, err := snap.Recognize(queryView(t), bad); err == nil {
			t.Errorf("limit %d accepted", bad)
		}
	}
	broken := recognize.Build([]*matching.Evidence{{ID: "evd_x", CigarID: "cig_x", Fingerprint: json.RawMessage(`{"version":"other"}`)}})
	if broken.Len() != 0 || broken.Skipped != 1 {
		t.Fatal("an unreadable fingerprint must be skipped, not served")
	}
}

// BenchmarkRecognize10k measures recognition at 10,000 evidence items through
// the index, next to a full scan that scores every item (the baseline).
func BenchmarkRecognize10k(b *testing.B) {
	ev := scaledEvidence(b, 10_000)
	views := queryView(b)
	b.Run("index", func(b *testing.B) {
		snap := recognize.Build(ev)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := snap.Recognize(views, 5); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full-scan-baseline", func(b *testing.B) {
		fps := make([]*fingerprint.Fingerprint, len(ev))
		for i, e := range ev {
			fps[i] = new(fingerprint.Fingerprint)
			json.Unmarshal(e.Fingerprint, fps[i])
		}
		for b.Loop() {
			best := 0.0
			for _, fp := range fps {
				best = max(best, fingerprint.Similarity(views[0], fp))
			}
		}
	})
}

// BenchmarkBuild10k is the rebuild every replica runs when evidence changes:
// it bounds how soon new evidence is recognized (one poll, 250 ms, plus this).
func BenchmarkBuild10k(b *testing.B) {
	ev := scaledEvidence(b, 10_000)
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			recognize.Build(ev)
		}
	})
	b.Run("after-one-addition", func(b *testing.B) {
		var builder recognize.Builder
		builder.Build(ev[:len(ev)-1])
		for b.Loop() {
			builder.Build(ev)
		}
	})
}

// TestBrandSiblings: in the second look, the lines of the best
// candidate's brand are scored even when neither shortlist found them
// (here a line of the brand whose band looks like none of the others), and
// only those.
func TestBrandSiblings(t *testing.T) {
	ev, cigars, recs := demoEvidence(t)
	shown := recs[40]
	unlike := func() image.Image { return bandart.Render(bandart.DesignFor("Nothing Alike", "Plain"), 800) }
	ev = append(ev, flatEvidence(t, []flatBand{
		{identify.Cigar{ID: "cig_unlike", Brand: shown.Brand, Name: "Plain"}, unlike},
		{identify.Cigar{ID: "cig_other", Brand: "Nothing Alike", Name: "Plain"}, unlike},
	}, nil, cigars)...)
	snap := recognize.Build(ev)
	fp, err := fingerprint.Compute(bandart.Photo(bandart.Render(bandart.DesignFor(shown.Brand, shown.Line), 800), bandart.Mild, 3), fingerprint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scored := map[string]bool{}
	for _, c := range snap.SecondLook([]*fingerprint.Fingerprint{fp}) {
		scored[c.CigarID] = true
	}
	if !scored[shown.CigarID] || !scored["cig_unlike"] {
		t.Errorf("scored the photo's line %v, its brand's unlike line %v; want both", scored[shown.CigarID], scored["cig_unlike"])
	}
	if scored["cig_other"] {
		t.Error("the same unlike band of another brand was scored too: it is shortlisted, and the test shows nothing")
	}
}
