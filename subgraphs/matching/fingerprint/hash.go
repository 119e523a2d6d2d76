package fingerprint

import (
	"encoding/hex"
	"math"
	"math/bits"
	"sort"
)

// gray returns the L channel of a Lab raster, resized by area averaging to
// w x h (w, h must divide the raster's size or be smaller; uneven cells are
// handled by integer boundaries).
func grayResize(lab *raster, w, h int) []float64 {
	out := make([]float64, w*h)
	for y := range h {
		y0, y1 := y*lab.h/h, max(y*lab.h/h+1, (y+1)*lab.h/h)
		for x := range w {
			x0, x1 := x*lab.w/w, max(x*lab.w/w+1, (x+1)*lab.w/w)
			var s float64
			for yy := y0; yy < y1; yy++ {
				for xx := x0; xx < x1; xx++ {
					s += float64(lab.p[(yy*lab.w+xx)*3])
				}
			}
			out[y*w+x] = s / float64((y1-y0)*(x1-x0))
		}
	}
	return out
}

// cellMeans returns the mean Lab of a w x h grid of cells.
func cellMeans(lab *raster, w, h int) [][3]float64 {
	out := make([][3]float64, w*h)
	for y := range h {
		y0, y1 := y*lab.h/h, max(y*lab.h/h+1, (y+1)*lab.h/h)
		for x := range w {
			x0, x1 := x*lab.w/w, max(x*lab.w/w+1, (x+1)*lab.w/w)
			var s [3]float64
			for yy := y0; yy < y1; yy++ {
				for xx := x0; xx < x1; xx++ {
					i := (yy*lab.w + xx) * 3
					s[0] += float64(lab.p[i])
					s[1] += float64(lab.p[i+1])
					s[2] += float64(lab.p[i+2])
				}
			}
			n := float64((y1 - y0) * (x1 - x0))
			out[y*w+x] = [3]float64{s[0] / n, s[1] / n, s[2] / n}
		}
	}
	return out
}

func hex64(v uint64) string {
	var b [8]byte
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

func parseHex64(s string) (uint64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, true
}

// dHash is the 64-bit difference hash: 9x8 grey cells, bit set where a
// cell is darker than its right neighbour.
func dHash(lab *raster) uint64 {
	g := grayResize(lab, 9, 8)
	var h uint64
	for y := range 8 {
		for x := range 8 {
			h <<= 1
			if g[y*9+x] < g[y*9+x+1] {
				h |= 1
			}
		}
	}
	return h
}

var dctTable = func() (t [32][32]float64) {
	for k := range 32 {
		for n := range 32 {
			t[k][n] = math.Cos(math.Pi / 32 * (float64(n) + 0.5) * float64(k))
		}
	}
	return t
}()

// dct2 is an (unnormalised) 2-D DCT-II of a 32x32 block, keeping the
// top-left 8x8 coefficients.
func dct2(in []float64) [64]float64 {
	var rows [32][8]float64
	for y := range 32 {
		for k := range 8 {
			var s float64
			for n := range 32 {
				s += in[y*32+n] * dctTable[k][n]
			}
			rows[y][k] = s
		}
	}
	var out [64]float64
	for k := range 8 {
		for kx := range 8 {
			var s float64
			for n := range 32 {
				s += rows[n][kx] * dctTable[k][n]
			}
			out[k*8+kx] = s
		}
	}
	return out
}

// pHash is the 64-bit DCT perceptual hash: 32x32 grey cells, the 8x8
// lowest frequencies, bit set where a coefficient exceeds their median (the
// DC term is left out of the median and its bit is 0).
func pHash(lab *raster) uint64 {
	c := dct2(grayResize(lab, 32, 32))
	ac := make([]float64, 0, 63)
	ac = append(ac, c[1:]...)
	sort.Float64s(ac)
	med := (ac[31] + ac[30]) / 2
	var h uint64
	for i := range 64 {
		h <<= 1
		if i > 0 && c[i] > med {
			h |= 1
		}
	}
	return h
}

// hashSimilarity maps the Hamming distance of two hex hashes to [0,1]:
// 1 identical, 0 at 32 bits (what unrelated images give) or more.
func hashSimilarity(a, b string) (float64, bool) {
	x, ok1 := parseHex64(a)
	y, ok2 := parseHex64(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	d := bits.OnesCount64(x ^ y)
	return math.Max(0, 1-float64(d)/32), true
}

// Colour layout: colourLayoutW x colourLayoutH cells of mean Lab, one byte
// per channel (L*2.55, a+128, b+128).
const (
	colourLayoutW = 16
	colourLayoutH = 4
)

func colourLayout(lab *raster) string {
	cells := cellMeans(lab, colourLayoutW, colourLayoutH)
	b := make([]byte, 0, len(cells)*3)
	for _, c := range cells {
		b = append(b, byte(clampF(c[0]*2.55, 0, 255)+0.5), byte(clampF(c[1]+128, 0, 255)+0.5), byte(clampF(c[2]+128, 0, 255)+0.5))
	}
	return hex.EncodeToString(b)
}

func parseColourLayout(s string) ([][3]float64, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != colourLayoutW*colourLayoutH*3 {
		return nil, false
	}
	out := make([][3]float64, colourLayoutW*colourLayoutH)
	for i := range out {
		out[i] = [3]float64{float64(b[i*3]) / 2.55, float64(b[i*3+1]) - 128, float64(b[i*3+2]) - 128}
	}
	return out, true
}

func clampF(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
