package fingerprint

import (
	"image"
	"image/color"
	"math"
)

// raster is a 3-channel float image, channels interleaved (RGB 0..255 or Lab).
type raster struct {
	w, h int
	p    []float32
}

func newRaster(w, h int) *raster { return &raster{w: w, h: h, p: make([]float32, w*h*3)} }

// bilinear samples at continuous coordinates (pixel centres at +0.5),
// clamping at the borders.
func (r *raster) bilinear(x, y float64) [3]float64 {
	x -= 0.5
	y -= 0.5
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := x-float64(x0), y-float64(y0)
	xa, xb := clampInt(x0, r.w), clampInt(x0+1, r.w)
	ya, yb := clampInt(y0, r.h), clampInt(y0+1, r.h)
	ia, ib, ic, id := (ya*r.w+xa)*3, (ya*r.w+xb)*3, (yb*r.w+xa)*3, (yb*r.w+xb)*3
	var c [3]float64
	for k := range 3 {
		top := float64(r.p[ia+k])*(1-fx) + float64(r.p[ib+k])*fx
		bot := float64(r.p[ic+k])*(1-fx) + float64(r.p[id+k])*fx
		c[k] = top*(1-fy) + bot*fy
	}
	return c
}

func clampInt(v, n int) int {
	if v < 0 {
		return 0
	}
	if v >= n {
		return n - 1
	}
	return v
}

// fitted is the size of a w x h image scaled down so its longer side is at
// most maxSide (not scaled up).
func fitted(w, h, maxSide int) (int, int) {
	scale := 1.0
	if m := max(w, h); m > maxSide {
		scale = float64(m) / float64(maxSide)
	}
	return max(1, int(math.Round(float64(w)/scale))), max(1, int(math.Round(float64(h)/scale)))
}

// downscale reads img into an RGB raster whose longer side is at most
// maxSide, by area averaging (one pass over the source, row by row: only one
// output row's sums are held). It returns the raster and the factor from
// raster to source coordinates.
func downscale(img image.Image, maxSide int) (*raster, float64) {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	w, h := fitted(sw, sh, maxSide)
	out := newRaster(w, h)
	sum := make([]float64, w*3)
	cnt := make([]float64, w)
	xmap := make([]int, sw)
	for x := range sw {
		xmap[x] = min(w-1, x*w/sw)
	}
	// Source rows come in order and map to output rows in order: an output
	// row is complete when the next source row maps past it.
	cur := 0
	flush := func() {
		for i := range cnt {
			if cnt[i] > 0 {
				for k := range 3 {
					out.p[(cur*w+i)*3+k] = float32(sum[i*3+k] / cnt[i])
				}
			}
		}
		clear(sum)
		clear(cnt)
	}
	row := func(y int) {
		if oy := min(h-1, y*h/sh); oy != cur {
			flush()
			cur = oy
		}
	}
	add := func(x int, r, g, bl float64) {
		i := xmap[x]
		sum[i*3] += r
		sum[i*3+1] += g
		sum[i*3+2] += bl
		cnt[i]++
	}
	switch m := img.(type) {
	case *image.YCbCr:
		for y := range sh {
			row(y)
			for x := range sw {
				yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
				ci := m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				add(x, float64(r), float64(g), float64(bl))
			}
		}
	case *image.RGBA:
		for y := range sh {
			row(y)
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				add(x, float64(m.Pix[o]), float64(m.Pix[o+1]), float64(m.Pix[o+2]))
				o += 4
			}
		}
	case *image.NRGBA:
		for y := range sh {
			row(y)
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				a := float64(m.Pix[o+3]) / 255
				add(x, float64(m.Pix[o])*a, float64(m.Pix[o+1])*a, float64(m.Pix[o+2])*a)
				o += 4
			}
		}
	case *image.Gray:
		for y := range sh {
			row(y)
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				v := float64(m.Pix[o+x])
				add(x, v, v, v)
			}
		}
	case *image.RGBA64: // 16-bit PNG: the high bytes, as RGBA() >> 8 gives
		for y := range sh {
			row(y)
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				add(x, float64(m.Pix[o]), float64(m.Pix[o+2]), float64(m.Pix[o+4]))
				o += 8
			}
		}
	case *image.NRGBA64: // as color.NRGBA64's RGBA method, >> 8
		for y := range sh {
			row(y)
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				p := m.Pix[o : o+8 : o+8]
				a := uint32(p[6])<<8 | uint32(p[7])
				ch := func(i int) float64 { return float64((uint32(p[i])<<8 | uint32(p[i+1])) * a / 0xffff >> 8) }
				add(x, ch(0), ch(2), ch(4))
				o += 8
			}
		}
	default:
		for y := range sh {
			row(y)
			for x := range sw {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				add(x, float64(r>>8), float64(g>>8), float64(bl>>8))
			}
		}
	}
	flush()
	return out, float64(sw) / float64(w)
}

// WorkBytes is about what Compute allocates for an image of w x h pixels,
// OCR included: the working image and what the band is found and measured on
// (about 100 bytes a working pixel: 14 MB measured for a 960x720 photo
// without OCR), the keypoints' grey image and its scales (about 22 bytes a
// pixel of it: 12 MB for a 1024x640 photo), and the larger copy OCR reads.
func WorkBytes(w, h int) int64 {
	scaled := func(side int) int64 {
		m := max(w, h)
		if m <= side {
			return int64(w) * int64(h)
		}
		f := float64(side) / float64(m)
		return int64(math.Ceil(float64(w)*f)) * int64(math.Ceil(float64(h)*f))
	}
	return 4<<20 + 96*scaled(workSide) + 22*scaled(kpSide) + 16*scaled(1600)
}

// toLab converts an RGB raster to CIELAB.
func toLab(rgb *raster) *raster {
	out := newRaster(rgb.w, rgb.h)
	for i := 0; i < len(rgb.p); i += 3 {
		L, A, B := rgbToLab(math.Round(float64(rgb.p[i])), math.Round(float64(rgb.p[i+1])), math.Round(float64(rgb.p[i+2])))
		out.p[i], out.p[i+1], out.p[i+2] = float32(L), float32(A), float32(B)
	}
	return out
}

// box3 is a 3x3 box blur.
func box3(r *raster) *raster {
	tmp, out := newRaster(r.w, r.h), newRaster(r.w, r.h)
	for y := range r.h {
		for x := range r.w {
			for k := range 3 {
				a := r.p[(y*r.w+max(0, x-1))*3+k] + r.p[(y*r.w+x)*3+k] + r.p[(y*r.w+min(r.w-1, x+1))*3+k]
				tmp.p[(y*r.w+x)*3+k] = a / 3
			}
		}
	}
	for y := range r.h {
		for x := range r.w {
			for k := range 3 {
				a := tmp.p[(max(0, y-1)*r.w+x)*3+k] + tmp.p[(y*r.w+x)*3+k] + tmp.p[(min(r.h-1, y+1)*r.w+x)*3+k]
				out.p[(y*r.w+x)*3+k] = a / 3
			}
		}
	}
	return out
}

// blankSpread is the colour spread (CIELAB units, between the 1st and 99th
// percentiles of L*, a* and b*) under which a working image is blank. A band
// photo spreads far wider: lettering on a ground is tens of units apart, and
// the cigar and background add more; JPEG noise on a white page spreads 1 or 2.
const blankSpread = 6

// blank reports whether a working image (in Lab) is (nearly) one colour.
func blank(lab *raster) bool {
	n := lab.w * lab.h
	vals := make([]float64, n)
	for k := range 3 {
		for i := range n {
			vals[i] = float64(lab.p[i*3+k])
		}
		if nth(vals, n-1-n/100)-nth(vals, n/100) >= blankSpread {
			return false
		}
	}
	return true
}
