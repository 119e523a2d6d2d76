package fingerprint

import (
	"math"
)

// Light on a band in a photo is neither even nor white: the cigar turns away
// from the lamp across the band, the room has a gradient, and the camera's
// white balance and exposure vary. These undo the part of that which is the
// same for every band, so that a photo and a studio evidence image of one
// band describe alike (the recognition benchmark measures the gain).

// flatten evens out the light along the rectified band (RGB, in place): it
// divides each column by a smooth gain, a quadratic fitted to the columns'
// median brightness and taken relative to its mean. A gain multiplies sRGB
// values as it does linear ones, so dividing it out works on either; a
// design's own dark or light ends are flattened alike in the photo and in
// the evidence.
func flatten(rgb *raster) {
	w, h := rgb.w, rgb.h
	if w < 3 || h < 1 {
		return
	}
	col := make([]float64, w)
	ys := make([]float64, h)
	for x := range w {
		for y := range h {
			i := (y*w + x) * 3
			ys[y] = 0.299*float64(rgb.p[i]) + 0.587*float64(rgb.p[i+1]) + 0.114*float64(rgb.p[i+2])
		}
		col[x] = nth(ys, h/2)
	}
	at := func(x int) float64 { return 2*(float64(x)+0.5)/float64(w) - 1 }
	// Least squares for col ≈ c0 + c1 t + c2 t²: the normal equations.
	var pow [5]float64
	var rhs [3]float64
	for x := range w {
		p := 1.0
		for k := range 5 {
			pow[k] += p
			if k < 3 {
				rhs[k] += p * col[x]
			}
			p *= at(x)
		}
	}
	c, ok := solve3([3][4]float64{
		{pow[0], pow[1], pow[2], rhs[0]},
		{pow[1], pow[2], pow[3], rhs[1]},
		{pow[2], pow[3], pow[4], rhs[2]},
	})
	if !ok {
		return
	}
	fit := make([]float64, w)
	var mean float64
	for x := range w {
		t := at(x)
		fit[x] = c[0] + c[1]*t + c[2]*t*t
		mean += fit[x] / float64(w)
	}
	if mean < 1 {
		return // black: nothing to even out
	}
	for x := range w {
		// Bounded: a fit gone wild near an end must not blow a column up.
		g := math.Min(3, math.Max(1.0/3, fit[x]/mean))
		for y := range h {
			i := (y*w + x) * 3
			for k := range 3 {
				rgb.p[i+k] = float32(math.Min(255, float64(rgb.p[i+k])/g))
			}
		}
	}
}

// grayWorld returns a white-balanced copy of an RGB raster: each channel
// scaled so that its mean is the mean of the three (the grey-world
// assumption). It takes out a colour cast and the band's overall hue alike,
// so only the measures that compare structure (the vector and the
// perceptual hashes) use it; the colours are reported as seen.
func grayWorld(rgb *raster) *raster {
	out := &raster{w: rgb.w, h: rgb.h, p: make([]float32, len(rgb.p))}
	var m [3]float64
	for i := 0; i < len(rgb.p); i += 3 {
		for k := range 3 {
			m[k] += float64(rgb.p[i+k])
		}
	}
	grey := (m[0] + m[1] + m[2]) / 3
	var gain [3]float64
	for k := range 3 {
		gain[k] = grey / math.Max(m[k], 1)
	}
	for i := 0; i < len(rgb.p); i += 3 {
		for k := range 3 {
			out.p[i+k] = float32(math.Min(255, float64(rgb.p[i+k])*gain[k]))
		}
	}
	return out
}

// solve3 solves three linear equations given as an augmented matrix
// (Gauss-Jordan with partial pivoting); false when they are singular.
func solve3(m [3][4]float64) ([3]float64, bool) {
	for c := range 3 {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if math.Abs(m[p][c]) < 1e-12 {
			return [3]float64{}, false
		}
		m[c], m[p] = m[p], m[c]
		for r := range 3 {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for k := c; k < 4; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	return [3]float64{m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]}, true
}
