package imagefetch

import (
	"image"
	"image/color"
)

// reduceFactor is the whole factor an sw x sh image is reduced by so that
// its longer side is from side to 2*side-1 pixels (1: as decoded, when it is
// shorter than 2*side). A whole factor keeps the reduced pixels aligned with
// the original's: each is the mean of a k x k block, so that what the
// fingerprint then averages is nearly what it would have averaged from the
// original (a fractional factor blurs the bins' edges).
func reduceFactor(sw, sh, side int) int { return max(1, max(sw, sh)/side) }

// reducedSize is the size of an sw x sh image reduced by k.
func reducedSize(sw, sh, k int) (w, h int) { return (sw + k - 1) / k, (sh + k - 1) / k }

// reducer area-averages an sw x sh image, given as premultiplied 8-bit RGBA
// pixels in any order, by a whole factor k: output pixel (x/k, y/k) is the
// mean of its block (a partial block at the right or bottom edge, of the
// pixels it has). Rows given in order need sums for one output row only
// (ordered); pixels in any order (Adam7 passes) need them for all.
type reducer struct {
	sw, sh, k, w, h int
	xcnt, ycnt      []uint32 // source columns (rows) per output column (row)
	sum             []uint32 // RGBA sums, rows x w x 4
	ordered         bool
	cur             int // ordered: the output row being summed
	out             *image.RGBA
}

func newReducer(sw, sh, k int, ordered bool) *reducer {
	w, h := reducedSize(sw, sh, k)
	r := &reducer{sw: sw, sh: sh, k: k, w: w, h: h, ordered: ordered,
		xcnt: make([]uint32, w), ycnt: make([]uint32, h),
		out: image.NewRGBA(image.Rect(0, 0, w, h))}
	for x := range sw {
		r.xcnt[x/k]++
	}
	for y := range sh {
		r.ycnt[y/k]++
	}
	rows := h
	if ordered {
		rows = 1
	}
	r.sum = make([]uint32, rows*w*4)
	return r
}

// reducerBytes is what a reducer of an sw x sh image by k holds: its sums,
// counts and output.
func reducerBytes(sw, sh, k int, ordered bool) int64 {
	w, h := reducedSize(sw, sh, k)
	rows := int64(h)
	if ordered {
		rows = 1
	}
	return rows*int64(w)*16 + int64(w+h)*4 + int64(w)*int64(h)*4
}

// row adds source row y, 4 bytes a pixel (ordered reducers only; rows in
// increasing order).
func (r *reducer) row(y int, px []uint8) {
	if oy := y / r.k; oy != r.cur {
		r.flush(r.cur)
		r.cur = oy
	}
	for x := range r.sw {
		s := r.sum[x/r.k*4 : x/r.k*4+4 : x/r.k*4+4]
		p := px[x*4 : x*4+4 : x*4+4]
		s[0] += uint32(p[0])
		s[1] += uint32(p[1])
		s[2] += uint32(p[2])
		s[3] += uint32(p[3])
	}
}

// pixel adds one source pixel (unordered reducers).
func (r *reducer) pixel(x, y int, p [4]uint8) {
	i := (y/r.k*r.w + x/r.k) * 4
	r.sum[i] += uint32(p[0])
	r.sum[i+1] += uint32(p[1])
	r.sum[i+2] += uint32(p[2])
	r.sum[i+3] += uint32(p[3])
}

// flush writes output row oy's averages and clears its sums.
func (r *reducer) flush(oy int) {
	base := 0
	if !r.ordered {
		base = oy * r.w * 4
	}
	dst := r.out.Pix[oy*r.out.Stride:]
	for ox := range r.w {
		n := r.xcnt[ox] * r.ycnt[oy]
		for k := range 4 {
			i := base + ox*4 + k
			if n > 0 {
				dst[ox*4+k] = uint8((r.sum[i] + n/2) / n)
			}
			r.sum[i] = 0
		}
	}
}

// image finishes the output.
func (r *reducer) image() *image.RGBA {
	if r.ordered {
		r.flush(r.cur)
		return r.out
	}
	for oy := range r.h {
		r.flush(oy)
	}
	return r.out
}

// reduce area-averages a decoded image by k into an *image.RGBA, reading it
// row by row (premultiplied, as image.Image's RGBA method gives colours).
func reduce(img image.Image, k int) *image.RGBA {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	r := newReducer(sw, sh, k, true)
	row := make([]uint8, sw*4)
	for y := range sh {
		sy := b.Min.Y + y
		switch m := img.(type) {
		case *image.YCbCr:
			for x := range sw {
				yi, ci := m.YOffset(b.Min.X+x, sy), m.COffset(b.Min.X+x, sy)
				row[x*4], row[x*4+1], row[x*4+2] = color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				row[x*4+3] = 0xff
			}
		case *image.Gray:
			o := m.PixOffset(b.Min.X, sy)
			for x, v := range m.Pix[o : o+sw] {
				row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = v, v, v, 0xff
			}
		case *image.RGBA:
			o := m.PixOffset(b.Min.X, sy)
			copy(row, m.Pix[o:o+sw*4])
		case *image.NRGBA: // WebP lossless
			o := m.PixOffset(b.Min.X, sy)
			for x := range sw {
				p := m.Pix[o+x*4 : o+x*4+4 : o+x*4+4]
				row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = premul(p[0], p[3]), premul(p[1], p[3]), premul(p[2], p[3]), p[3]
			}
		case *image.NYCbCrA: // WebP lossy with alpha
			for x := range sw {
				yi, ci := m.YOffset(b.Min.X+x, sy), m.COffset(b.Min.X+x, sy)
				a := m.A[m.AOffset(b.Min.X+x, sy)]
				cr, cg, cb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = premul(cr, a), premul(cg, a), premul(cb, a), a
			}
		default: // CMYK, ...: rare, slower, the same colours
			for x := range sw {
				cr, cg, cb, ca := m.At(b.Min.X+x, sy).RGBA()
				row[x*4], row[x*4+1], row[x*4+2], row[x*4+3] = uint8(cr>>8), uint8(cg>>8), uint8(cb>>8), uint8(ca>>8)
			}
		}
		r.row(y, row)
	}
	return r.image()
}

// premul is color.NRGBA's RGBA method for one channel, to 8 bits.
func premul(v, a uint8) uint8 { return uint8(uint32(v) * 0x101 * uint32(a) / 0xff >> 8) }
