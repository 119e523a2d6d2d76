package fingerprint

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
)

// Local features: what tells apart two bands that share most of their
// design (a brand's lines, differing in the line's name, a ribbon, an
// accent) is small, and a photo sees it blurred, turned, in perspective,
// partly covered and away from where the locator put the band. Corners
// (FAST) found at eight scales of the whole photo, each described by the
// brightness order of 256 pairs of points around it (turned with the
// corner's orientation), are matched against an evidence's and checked for
// one consistent placement of the design in the photo (see keymatch.go):
// the corners of the line's name match only on a photo of that line. The
// photo's located band is not needed, so a band the locator missed still
// matches.

// Keypoint extraction settings.
const (
	// kpSide is the longer side of the grey image corners are found in (800
	// found 3 to 5 points fewer lines first on held-out photos).
	kpSide = 960
	// kpLevels scales, each kpFactor smaller than the last: a band 3.5
	// times smaller in a photo than in its evidence still meets it.
	kpLevels = 8
	kpFactor = 1.25
	// KeypointsMax is the most keypoints a photo's fingerprint keeps, and
	// the most a fingerprint may carry. Twice evidence's: the band may be a
	// small part of a photo whose background (a checked cloth, a woven
	// ground) has corners everywhere; on held-out bandgen photos, 2000
	// rather than 1000 put 6 points more lines first at the strongest level
	// and 4 more at the medium one, for 13 ms more a photo (3000: no more).
	KeypointsMax = 2000
	// EvidenceKeypoints is the most keypoints evidence keeps: evidence is
	// the band alone, and what it keeps is held in memory for every line.
	EvidenceKeypoints = 1000
	// kpThreshold is FAST's brightness step (grey levels, 0..255).
	kpThreshold = 10
	// kpPatch is the radius of the patch a corner is described in; the
	// pattern's points stay within kpPatch-2 so that turned and smoothed
	// (a 5x5 box) they stay inside it.
	kpPatch  = 15
	kpBorder = kpPatch + 3
	// kpAngles is how finely the pattern is turned (bins of the circle).
	kpAngles = 32
)

// Keypoints are an image's local features: for each, where (pixels of the
// image scaled to kpSide on its longer side), at which scale, turned how, and
// its 256-bit descriptor. In JSON they are one base64 string of packed
// records (keypointSize bytes each): x and y (1/32 pixel, uint16), level,
// angle (1/256 turn), descriptor (32 bytes).
type Keypoints struct {
	pts  []keypoint
	desc []uint64 // 4 a keypoint
	// The keypoints' extent, computed once (see centre).
	centreOnce   sync.Once
	cx, cy, side float64
}

type keypoint struct {
	x, y  float32
	level uint8
	angle uint8
}

const keypointSize = 2 + 2 + 1 + 1 + 32

// Len is the number of keypoints.
func (k *Keypoints) Len() int {
	if k == nil {
		return 0
	}
	return len(k.pts)
}

// Descriptors are the descriptors, 4 words a keypoint, in order; the
// caller must not change them.
func (k *Keypoints) Descriptors() []uint64 {
	if k == nil {
		return nil
	}
	return k.desc
}

// MarshalJSON writes the packed records as base64.
func (k *Keypoints) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, len(k.pts)*keypointSize)
	for i, p := range k.pts {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(math.Round(float64(p.x)*32)))
		buf = binary.LittleEndian.AppendUint16(buf, uint16(math.Round(float64(p.y)*32)))
		buf = append(buf, p.level, p.angle)
		for _, d := range k.desc[i*4 : i*4+4] {
			buf = binary.LittleEndian.AppendUint64(buf, d)
		}
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(buf))
}

// errKeypoints is the error for keypoints that are not packed records.
var errKeypoints = errors.New("keypoints: not base64 of whole keypoint records")

// UnmarshalJSON reads the packed records.
func (k *Keypoints) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errKeypoints
	}
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(buf)%keypointSize != 0 || len(buf)/keypointSize > KeypointsMax {
		return errKeypoints
	}
	n := len(buf) / keypointSize
	k.pts = make([]keypoint, n)
	k.desc = make([]uint64, 4*n)
	for i := range n {
		r := buf[i*keypointSize:]
		k.pts[i] = keypoint{
			x:     float32(binary.LittleEndian.Uint16(r)) / 32,
			y:     float32(binary.LittleEndian.Uint16(r[2:])) / 32,
			level: r[4], angle: r[5],
		}
		if k.pts[i].level >= kpLevels {
			return errKeypoints
		}
		for j := range 4 {
			k.desc[i*4+j] = binary.LittleEndian.Uint64(r[6+8*j:])
		}
	}
	return nil
}

// grey is an 8-bit grey image.
type grey struct {
	w, h int
	p    []uint8
}

// greyOf reads img as grey (Rec. 601 luma) scaled by area averaging so its
// longer side is at most maxSide. A JPEG's luma plane is read as it is.
func greyOf(img image.Image, maxSide int) *grey {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	w, h := fitted(sw, sh, maxSide)
	sum := make([]uint32, w*h)
	cnt := make([]uint32, w*h)
	xmap := make([]int32, sw)
	for x := range sw {
		xmap[x] = int32(min(w-1, x*w/sw))
	}
	luma := func(r, g, b uint32) uint32 { return (19595*r + 38470*g + 7471*b + 1<<15) >> 16 }
	for y := range sh {
		row := sum[min(h-1, y*h/sh)*w:]
		crow := cnt[min(h-1, y*h/sh)*w:]
		switch m := img.(type) {
		case *image.YCbCr:
			o := m.YOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				row[xmap[x]] += uint32(m.Y[o+x])
				crow[xmap[x]]++
			}
		case *image.Gray:
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				row[xmap[x]] += uint32(m.Pix[o+x])
				crow[xmap[x]]++
			}
		case *image.RGBA:
			o := m.PixOffset(b.Min.X, b.Min.Y+y)
			for x := range sw {
				row[xmap[x]] += luma(uint32(m.Pix[o]), uint32(m.Pix[o+1]), uint32(m.Pix[o+2]))
				crow[xmap[x]]++
				o += 4
			}
		default:
			for x := range sw {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				row[xmap[x]] += uint32(color.GrayModel.Convert(color.RGBA64{uint16(r), uint16(g), uint16(bl), 0xffff}).(color.Gray).Y)
				crow[xmap[x]]++
			}
		}
	}
	out := &grey{w: w, h: h, p: make([]uint8, w*h)}
	for i := range sum {
		if cnt[i] > 0 {
			out.p[i] = uint8((sum[i] + cnt[i]/2) / cnt[i])
		}
	}
	return out
}

// shrink resamples g to w x h (bilinear, 8-bit fixed-point weights).
func (g *grey) shrink(w, h int) *grey {
	out := &grey{w: w, h: h, p: make([]uint8, w*h)}
	sx, sy := float64(g.w)/float64(w), float64(g.h)/float64(h)
	x0s, x1s, txs := make([]int32, w), make([]int32, w), make([]int32, w)
	for x := range w {
		fx := math.Max(0, (float64(x)+0.5)*sx-0.5)
		x0 := int(fx)
		x0s[x], x1s[x], txs[x] = int32(x0), int32(min(x0+1, g.w-1)), int32((fx-float64(x0))*256)
	}
	for y := range h {
		fy := math.Max(0, (float64(y)+0.5)*sy-0.5)
		y0 := int(fy)
		ty := int32((fy - float64(y0)) * 256)
		r0, r1 := g.p[y0*g.w:(y0+1)*g.w], g.p[min(y0+1, g.h-1)*g.w:(min(y0+1, g.h-1)+1)*g.w]
		o := out.p[y*w : (y+1)*w]
		for x := range o {
			x0, x1, tx := x0s[x], x1s[x], txs[x]
			top := int32(r0[x0])*(256-tx) + int32(r0[x1])*tx
			bot := int32(r1[x0])*(256-tx) + int32(r1[x1])*tx
			o[x] = uint8((top*(256-ty) + bot*ty + 1<<15) >> 16)
		}
	}
	return out
}

// fastCircle is FAST's ring of 16 pixels at radius 3.
var fastCircle = [16][2]int{{0, -3}, {1, -3}, {2, -2}, {3, -1}, {3, 0}, {3, 1}, {2, 2}, {1, 3}, {0, 3}, {-1, 3}, {-2, 2}, {-3, 1}, {-3, 0}, {-3, -1}, {-2, -2}, {-1, -3}}

type corner struct {
	x, y  int32
	score float32
	i     int32 // its descriptor's place (describeAll)
}

// fastCorners finds FAST-9 corners (9 contiguous ring pixels all brighter,
// or all darker, than the centre by t), kept where their score (the summed
// step beyond t over the ring) is the 3x3 neighbourhood's largest.
func fastCorners(g *grey, t int32, scores []float32) []corner {
	w := g.w
	var off [16]int
	for i, c := range fastCircle {
		off[i] = c[1]*w + c[0]
	}
	clear(scores)
	var cs []corner
	for y := kpBorder; y < g.h-kpBorder; y++ {
		row := g.p[y*w : (y+1)*w]
		up, down := g.p[(y-3)*w:(y-2)*w], g.p[(y+3)*w:(y+4)*w]
		for x := kpBorder; x < w-kpBorder; x++ {
			p := int32(row[x])
			hi, lo := p+t, p-t
			// Nine contiguous ring pixels include one of any two opposite
			// ones, and two of the four compass points: most pixels are
			// turned away by two or four reads.
			v0, v8 := int32(up[x]), int32(down[x])
			if v0 <= hi && v0 >= lo && v8 <= hi && v8 >= lo {
				continue
			}
			v4, v12 := int32(row[x+3]), int32(row[x-3])
			if v4 <= hi && v4 >= lo && v12 <= hi && v12 >= lo {
				continue
			}
			nb := b2i(v0 > hi) + b2i(v4 > hi) + b2i(v8 > hi) + b2i(v12 > hi)
			nd := b2i(v0 < lo) + b2i(v4 < lo) + b2i(v8 < lo) + b2i(v12 < lo)
			if nb < 2 && nd < 2 {
				continue
			}
			i := y*w + x
			var bm, dm uint32
			for k := range 16 {
				v := int32(g.p[i+off[k]])
				// The sign bit of hi-v is set when v > hi.
				bm |= uint32(hi-v) >> 31 << k
				dm |= uint32(v-lo) >> 31 << k
			}
			bright, dark := run9(bm), run9(dm)
			if !bright && !dark {
				continue
			}
			// The score: the summed step beyond t of the ring's brighter
			// (or darker) pixels.
			var sb, sd int32
			for k := range 16 {
				v := int32(g.p[i+off[k]])
				if v > hi {
					sb += v - hi
				} else if v < lo {
					sd += lo - v
				}
			}
			var s int32
			if bright {
				s = sb
			}
			if dark && sd > s {
				s = sd
			}
			if s > 0 {
				scores[i] = float32(s)
				cs = append(cs, corner{x: int32(x), y: int32(y), score: float32(s)})
			}
		}
	}
	kept := cs[:0]
	for _, c := range cs {
		i := int(c.y)*w + int(c.x)
		s := scores[i]
		if s < scores[i-1] || s < scores[i+1] || s < scores[i-w-1] || s < scores[i-w] || s < scores[i-w+1] ||
			s < scores[i+w-1] || s < scores[i+w] || s < scores[i+w+1] ||
			// Ties go to the first in reading order.
			s == scores[i-1] || s == scores[i-w-1] || s == scores[i-w] || s == scores[i-w+1] {
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run9 says whether a 16-bit ring mask has 9 contiguous bits set.
func run9(m uint32) bool {
	if bits.OnesCount32(m) < 9 {
		return false
	}
	m |= m << 16
	r := m
	for range 8 {
		r &= r >> 1
	}
	return r != 0
}

// harris is the Harris corner response at (x, y) over a 7x7 window.
func harris(g *grey, x, y int) float32 {
	var a, b, c float32
	w := g.w
	for dy := -3; dy <= 3; dy++ {
		i := (y+dy)*w + x - 3
		for range 7 {
			ix := float32(g.p[i+1]) - float32(g.p[i-1])
			iy := float32(g.p[i+w]) - float32(g.p[i-w])
			a += ix * ix
			b += iy * iy
			c += ix * iy
			i++
		}
	}
	return a*b - c*c - 0.04*(a+b)*(a+b)
}

// integral is a summed-area table of g, (w+1) x (h+1).
func integral(g *grey, dst []uint32) []uint32 {
	w1 := g.w + 1
	dst = slices.Grow(dst[:0], w1*(g.h+1))[:w1*(g.h+1)]
	clear(dst[:w1])
	for y := range g.h {
		var run uint32
		dst[(y+1)*w1] = 0
		for x := range g.w {
			run += uint32(g.p[y*g.w+x])
			dst[(y+1)*w1+x+1] = dst[y*w1+x+1] + run
		}
	}
	return dst
}

// kpPattern is the descriptor's 256 pairs of points (BRIEF's isotropic
// Gaussian, σ = 31/5, within kpPatch-2), fixed by a seed: descriptors from
// any release of the format compare.
var kpPattern = func() [256][4]float64 {
	r := rand.New(rand.NewPCG(0x76697461, 0x6b657970))
	var out [256][4]float64
	for i := range out {
		for k := range 4 {
			for {
				v := math.Round(r.NormFloat64() * 31 / 5)
				if math.Abs(v) <= kpPatch-2 {
					out[i][k] = v
					break
				}
			}
		}
	}
	return out
}()

// kpTurned is the pattern turned to each of kpAngles angles, as offsets.
var kpTurned = func() [kpAngles][256][4]int8 {
	var out [kpAngles][256][4]int8
	for a := range kpAngles {
		th := 2 * math.Pi * float64(a) / kpAngles
		c, s := math.Cos(th), math.Sin(th)
		for i, p := range kpPattern {
			for k := 0; k < 4; k += 2 {
				x, y := p[k], p[k+1]
				rx, ry := math.Round(x*c-y*s), math.Round(x*s+y*c)
				rx, ry = clampF(rx, -(kpPatch-1), kpPatch-1), clampF(ry, -(kpPatch-1), kpPatch-1)
				out[a][i][k], out[a][i][k+1] = int8(rx), int8(ry)
			}
		}
	}
	return out
}()

// kpDisk is the half-width of each row of the orientation disk.
var kpDisk = func() [2*kpPatch + 1]int {
	var out [2*kpPatch + 1]int
	for dy := -kpPatch; dy <= kpPatch; dy++ {
		out[dy+kpPatch] = int(math.Sqrt(float64(kpPatch*kpPatch - dy*dy)))
	}
	return out
}()

// orientation is the angle from (x, y) to the disk's intensity centroid,
// in 1/256 turns.
func orientation(g *grey, x, y int) uint8 {
	var m01, m10 int32
	for dy := -kpPatch; dy <= kpPatch; dy++ {
		hw := kpDisk[dy+kpPatch]
		row := g.p[(y+dy)*g.w+x-hw : (y+dy)*g.w+x+hw+1]
		var s int32
		for i, v := range row {
			m10 += int32(i-hw) * int32(v)
			s += int32(v)
		}
		m01 += int32(dy) * s
	}
	a := math.Atan2(float64(m01), float64(m10))
	return uint8(int(math.Round(a/(2*math.Pi)*256)) & 255)
}

// describe writes the 256-bit descriptor of the corner at (x, y) turned by
// angle: bit i is set when the 5x5 box at the pair's first point is darker
// than at its second.
func describe(ii []uint32, w, x, y int, angle uint8, dst []uint64) {
	w1 := w + 1
	box := func(dx, dy int8) uint32 {
		x0, y0 := x+int(dx)-2, y+int(dy)-2
		a := y0*w1 + x0
		b := (y0+5)*w1 + x0
		return ii[b+5] - ii[b] - ii[a+5] + ii[a]
	}
	pat := &kpTurned[(int(angle)*kpAngles+128)/256%kpAngles]
	for i := range 4 {
		var d uint64
		for j := range 64 {
			p := &pat[i*64+j]
			if box(p[0], p[1]) < box(p[2], p[3]) {
				d |= 1 << j
			}
		}
		dst[i] = d
	}
}

// keypointsOf finds and describes the keypoints of a photo, or of evidence
// (up to KeypointsMax or EvidenceKeypoints). Each scale keeps a share by
// its side (a scale 1.25 times smaller keeps 1.25 times fewer), chosen from
// the twice as many strongest FAST corners: half of them the strongest by
// Harris response, half spread over the image (see spread). A photo's
// repeated corners are left out first (see unrepeated); evidence's are
// kept, since it is the band alone and its repeated parts are its own.
func keypointsOf(img image.Image, evidence bool) *Keypoints {
	budget := KeypointsMax
	if evidence {
		budget = EvidenceKeypoints
	}
	g0 := greyOf(img, kpSide)
	out := &Keypoints{}
	var shares [kpLevels]float64
	tot := 0.0
	for l := range kpLevels {
		shares[l] = math.Pow(kpFactor, -float64(l))
		tot += shares[l]
	}
	scores := make([]float32, g0.w*g0.h)
	var ii []uint32
	g := g0
	for l := range kpLevels {
		if l > 0 {
			scale := math.Pow(kpFactor, float64(l))
			g = g.shrink(int(math.Round(float64(g0.w)/scale)), int(math.Round(float64(g0.h)/scale)))
		}
		if g.w < 2*kpBorder+8 || g.h < 2*kpBorder+8 {
			break
		}
		// Rounded shares may sum past the budget: the last scales give way.
		want := min(int(math.Round(float64(budget)*shares[l]/tot)), budget-len(out.pts))
		cs := fastCorners(g, kpThreshold, scores[:g.w*g.h])
		slices.SortFunc(cs, cmpCorner)
		cs = cs[:min(len(cs), 2*want)]
		for i := range cs {
			cs[i].score = harris(g, int(cs[i].x), int(cs[i].y))
		}
		ii = integral(g, ii)
		// A photo's corners are described before they are chosen, so that
		// repeated ones are not; evidence's only once chosen.
		var angles []uint8
		var desc []uint64
		if !evidence {
			angles, desc = describeAll(g, ii, cs)
			cs = unrepeated(cs, desc)
		}
		cs = spread(cs, want)
		if evidence {
			angles, desc = describeAll(g, ii, cs)
		}
		sx, sy := float64(g0.w)/float64(g.w), float64(g0.h)/float64(g.h)
		for _, c := range cs {
			out.pts = append(out.pts, keypoint{
				x: float32((float64(c.x)+0.5)*sx - 0.5), y: float32((float64(c.y)+0.5)*sy - 0.5),
				level: uint8(l), angle: angles[c.i],
			})
			out.desc = append(out.desc, desc[4*c.i:4*c.i+4]...)
		}
	}
	return out
}

// describeAll orients and describes the corners of g (ii is its integral),
// numbering them (corner.i) by their place in the slices it returns.
func describeAll(g *grey, ii []uint32, cs []corner) ([]uint8, []uint64) {
	angles := make([]uint8, len(cs))
	desc := make([]uint64, 4*len(cs))
	for i := range cs {
		x, y := int(cs[i].x), int(cs[i].y)
		cs[i].i = int32(i)
		angles[i] = orientation(g, x, y)
		describe(ii, g.w, x, y, angles[i], desc[4*i:4*i+4])
	}
	return angles, desc
}

// A photo's corner is repeated when kpRepeats or more of the other corners
// found at its scale have descriptors within kpRepeatBits of its own: a
// checked cloth, a woven ground, a grille, a dashed border. Such a corner
// cannot be paired with one evidence keypoint rather than another, and
// where the band is a small part of a busy photo, repeated corners took
// most of its keypoints and gave the wrong designs' repeated parts their
// votes. On held-out bandgen photos at the strongest level, leaving them
// out put the line among the first five on 86% of them instead of 81%, and
// its brand first on 86% instead of 79%, with the milder levels as they
// were, and halved the slowest recognitions (from 36 to 48 bits and from 3
// to 10 repeats, all within two photos of each other).
const (
	kpRepeatBits = 40
	kpRepeats    = 6
)

// unrepeated keeps the corners that are not repeated (desc holds their
// descriptors by corner.i). It compares every two corners of one scale:
// at the finest, a photo's are at most about 960, a few milliseconds.
func unrepeated(cs []corner, desc []uint64) []corner {
	near := make([]int32, len(cs))
	for a := range cs {
		da := desc[4*cs[a].i : 4*cs[a].i+4 : 4*cs[a].i+4]
		for b := a + 1; b < len(cs); b++ {
			db := desc[4*cs[b].i : 4*cs[b].i+4 : 4*cs[b].i+4]
			if DescriptorDistance(da, db) <= kpRepeatBits {
				near[a]++
				near[b]++
			}
		}
	}
	out := cs[:0]
	for i, c := range cs {
		if near[i] < kpRepeats {
			out = append(out, c)
		}
	}
	return out
}

// kpCell is the side (pixels of a scale's image) of the cells corners are
// spread over.
const kpCell = 24

// spread picks up to want corners with a positive Harris response: the
// strongest half of them, then the rest spread over the image, the
// strongest of each cell of kpCell first, then each cell's second, and so
// on. A repeated pattern of strong corners (a dashed border, a woven
// ground) must not take every place from the lettering, which is what
// tells a brand's lines apart; spreading them all gives the background
// of a busy photo as many places as the band. On held-out photos, spreading
// half found the most lines first at the two milder levels and all but the
// strongest.
func spread(cs []corner, want int) []corner {
	slices.SortFunc(cs, cmpCorner)
	for len(cs) > 0 && cs[len(cs)-1].score <= 0 {
		cs = cs[:len(cs)-1]
	}
	if len(cs) <= want {
		return cs
	}
	first := want / 2
	type ranked struct {
		c    corner
		rank int
	}
	seen := map[[2]int32]int{}
	rest := make([]ranked, 0, len(cs)-first)
	for _, c := range cs[first:] {
		k := [2]int32{c.x / kpCell, c.y / kpCell}
		rest = append(rest, ranked{c, seen[k]})
		seen[k]++
	}
	slices.SortStableFunc(rest, func(a, b ranked) int { return a.rank - b.rank })
	out := cs[:first:first]
	for _, r := range rest[:want-first] {
		out = append(out, r.c)
	}
	return out
}

// cmpCorner orders corners strongest first, then in reading order.
func cmpCorner(a, b corner) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	case a.y != b.y:
		return int(a.y - b.y)
	}
	return int(a.x - b.x)
}
