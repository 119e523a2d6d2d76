package fingerprint

import (
	"math"
	"testing"
)

// stripedBand is a w x h RGB band of horizontal stripes (every column alike),
// each pixel's channels multiplied by gain(t) and cast, t in [-1, 1] along
// the band.
func stripedBand(w, h int, gain func(t float64) float64, cast [3]float64) *raster {
	r := newRaster(w, h)
	for y := range h {
		base := [3]float64{180, 150, 90} // a gold ground
		if (y/8)%2 == 1 {
			base = [3]float64{90, 30, 30} // a red stripe
		}
		for x := range w {
			g := gain(2*(float64(x)+0.5)/float64(w) - 1)
			for k := range 3 {
				r.p[(y*w+x)*3+k] = float32(base[k] * g * cast[k])
			}
		}
	}
	return r
}

func TestFlatten(t *testing.T) {
	white := [3]float64{1, 1, 1}
	for _, c := range []struct {
		name string
		gain func(t float64) float64
	}{
		{"even light", func(float64) float64 { return 1 }},
		{"a gradient along the band", func(t float64) float64 { return 1 + 0.3*t }},
		{"lamp to one side of the cigar", func(t float64) float64 { return 0.75 + 0.2*t - 0.25*t*t }},
		{"dim", func(float64) float64 { return 0.5 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := stripedBand(64, 32, c.gain, white)
			flatten(b)
			// Every column is now alike: each pixel as its column 0
			// counterpart, within rounding.
			for y := range b.h {
				for x := range b.w {
					for k := range 3 {
						got, want := b.p[(y*b.w+x)*3+k], b.p[(y*b.w)*3+k]
						if math.Abs(float64(got-want)) > 0.01*float64(want)+0.01 {
							t.Fatalf("pixel (%d,%d) channel %d = %.2f, column 0 has %.2f: light not evened", x, y, k, got, want)
						}
					}
				}
			}
			// And the band keeps its mean brightness (the gain is relative).
			even := stripedBand(64, 32, c.gain, white)
			if d := math.Abs(meanOf(b, 1) - meanOf(even, 1)); d > 0.02*meanOf(even, 1) {
				t.Errorf("mean green moved from %.1f to %.1f", meanOf(even, 1), meanOf(b, 1))
			}
		})
	}
	t.Run("black stays black", func(t *testing.T) {
		b := newRaster(16, 8)
		flatten(b)
		for i, v := range b.p {
			if v != 0 {
				t.Fatalf("p[%d] = %v", i, v)
			}
		}
	})
}

func meanOf(r *raster, k int) float64 {
	var s float64
	for i := k; i < len(r.p); i += 3 {
		s += float64(r.p[i])
	}
	return s / float64(r.w*r.h)
}

func TestGrayWorld(t *testing.T) {
	even := func(float64) float64 { return 1 }
	plain := stripedBand(32, 32, even, [3]float64{1, 1, 1})
	for _, c := range []struct {
		name string
		cast [3]float64
	}{
		{"no cast", [3]float64{1, 1, 1}},
		{"warm lamp", [3]float64{1.15, 1, 0.85}},
		{"cool shade", [3]float64{0.88, 0.97, 1.12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := stripedBand(32, 32, even, c.cast)
			before := append([]float32(nil), in.p...)
			out := grayWorld(in)
			for i := range before {
				if in.p[i] != before[i] {
					t.Fatal("grayWorld changed its input")
				}
			}
			// Channel means equal...
			m := [3]float64{meanOf(out, 0), meanOf(out, 1), meanOf(out, 2)}
			if math.Abs(m[0]-m[1]) > 0.01*m[1] || math.Abs(m[2]-m[1]) > 0.01*m[1] {
				t.Errorf("channel means %.1f %.1f %.1f, want equal", m[0], m[1], m[2])
			}
			// ...and, a cast being per-channel gains, every cast of one
			// band balances to the same image, up to overall brightness.
			ref := grayWorld(plain)
			scale := meanOf(ref, 1) / m[1]
			for i := range out.p {
				if d := math.Abs(float64(out.p[i])*scale - float64(ref.p[i])); d > 0.5 {
					t.Fatalf("p[%d] = %.2f after the cast, %.2f without", i, float64(out.p[i])*scale, ref.p[i])
				}
			}
		})
	}
}

func TestSolve3(t *testing.T) {
	x, ok := solve3([3][4]float64{{2, 1, -1, 8}, {-3, -1, 2, -11}, {-2, 1, 2, -3}})
	if !ok || math.Abs(x[0]-2) > 1e-9 || math.Abs(x[1]-3) > 1e-9 || math.Abs(x[2]+1) > 1e-9 {
		t.Errorf("solve3 = %v, %v; want [2 3 -1]", x, ok)
	}
	if _, ok := solve3([3][4]float64{{1, 2, 3, 1}, {2, 4, 6, 2}, {0, 1, 1, 0}}); ok {
		t.Error("a singular system was solved")
	}
}
