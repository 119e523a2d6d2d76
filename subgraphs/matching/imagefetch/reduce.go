package imagefetch

import (
	"image"
	"image/color"
	"math"
)

// reducedSize is the size an sw x sh image is handed out at when its longer
// side is over side: area averaging to a longer side of side, with the
// rounding fingerprint's own downscale uses.
func reducedSize(sw, sh, side int) (w, h int) {
	m := max(sw, sh)
	if m <= side {
		return sw, sh
	}
	scale := float64(m) / float64(side)
	return max(1, int(math.Round(float64(sw)/scale))), max(1, int(math.Round(float64(sh)/scale)))
}

// reducer area-averages an sw x sh image, given as premultiplied 8-bit RGBA
// pixels in any order, into a w x h *image.RGBA. Source pixel (x, y) falls in
// output pixel (x*w/sw, y*h/sh). Rows given in order need sums for one output
// row only (ordered); pixels in any order (Adam7 passes) need them for all.
type reducer struct {
	sw, sh, w, h int
	xmap         []int32  // output column of each source column
	xcnt, ycnt   []uint32 // source columns (rows) per output column (row)
	sum          []uint32 // RGBA sums, rows x w x 4
	ordered      bool
	cur          int // ordered: the output row being summed
	out          *image.RGBA
}

func newReducer(sw, sh, w, h int, ordered bool) *reducer {
	r := &reducer{sw: sw, sh: sh, w: w, h: h, ordered: ordered,
		xmap: make([]int32, sw), xcnt: make([]uint32, w), ycnt: make([]uint32, h),
		out: image.NewRGBA(image.Rect(0, 0, w, h))}
	for x := range sw {
		ox := min(w-1, x*w/sw)
		r.xmap[x] = int32(ox)
		r.xcnt[ox]++
	}
	for y := range sh {
		r.ycnt[min(h-1, y*h/sh)]++
	}
	rows := h
	if ordered {
		rows = 1
	}
	r.sum = make([]uint32, rows*w*4)
	return r
}

// reducerBytes is what a reducer holds: its sums, maps and output.
func reducerBytes(sw, w, h int, ordered bool) int64 {
	rows := int64(h)
	if ordered {
		rows = 1
	}
	return rows*int64(w)*16 + int64(sw)*4 + int64(w+h)*4 + int64(w)*int64(h)*4
}

// row adds source row y, 4 bytes a pixel (ordered reducers only; rows in
// increasing order).
func (r *reducer) row(y int, px []uint8) {
	oy := min(r.h-1, y*r.h/r.sh)
	if oy != r.cur {
		r.flush(r.cur)
		r.cur = oy
	}
	for x, ox := range r.xmap {
		s := r.sum[int(ox)*4 : int(ox)*4+4 : int(ox)*4+4]
		p := px[x*4 : x*4+4 : x*4+4]
		s[0] += uint32(p[0])
		s[1] += uint32(p[1])
		s[2] += uint32(p[2])
		s[3] += uint32(p[3])
	}
}

// pixel adds one source pixel (unordered reducers).
func (r *reducer) pixel(x, y int, p [4]uint8) {
	oy := min(r.h-1, y*r.h/r.sh)
	i := (oy*r.w + int(r.xmap[x])) * 4
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

// reduce area-averages a decoded image into a w x h *image.RGBA, reading it
// row by row (premultiplied, as image.Image's RGBA method gives colours).
func reduce(img image.Image, w, h int) *image.RGBA {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	r := newReducer(sw, sh, w, h, true)
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
