package fingerprint

import (
	"math"
	"sort"
)

// box is an oriented rectangle in working-image pixels.
type box struct {
	cx, cy       float64
	angle        float64 // long axis, radians, image coordinates (y down)
	halfW, halfH float64
	conf         float64
}

func (b box) point(u, v float64) (float64, float64) {
	c, s := math.Cos(b.angle), math.Sin(b.angle)
	return b.cx + u*c - v*s, b.cy + u*s + v*c
}

// segmentation: union-find over 4-neighbours whose colours differ by less
// than a threshold (CIELAB ΔE). Gradual shading merges, edges split.
type segmentation struct {
	w, h   int
	label  []int32
	n      int
	stats  []segStats
	pixels [][]int32 // pixel indices per segment
}

type segStats struct {
	area                   int
	sx, sy, sxx, syy, sxy  float64
	minX, minY, maxX, maxY int
	meanL, meanA, meanB    float64
}

func find(parent []int32, i int32) int32 {
	for parent[i] != i {
		parent[i] = parent[parent[i]]
		i = parent[i]
	}
	return i
}

// segment merges 4-neighbours in order of increasing colour difference
// (Kruskal), while the difference is under thr and the two regions' mean
// colours differ by less than meanThr: gradual shading merges, fine patterns
// (after smoothing) merge, edges split, and slow leaks are stopped by the
// mean test.
func segment(lab *raster, thr, meanThr float64) *segmentation {
	w, h := lab.w, lab.h
	parent := make([]int32, w*h)
	size := make([]float64, w*h)
	sum := make([][3]float64, w*h)
	for i := range parent {
		parent[i] = int32(i)
		size[i] = 1
		sum[i] = [3]float64{float64(lab.p[i*3]), float64(lab.p[i*3+1]), float64(lab.p[i*3+2])}
	}
	d := func(i, j int) float64 {
		a, b := lab.p[i*3:i*3+3], lab.p[j*3:j*3+3]
		d0, d1, d2 := a[0]-b[0], a[1]-b[1], a[2]-b[2]
		return math.Sqrt(float64(d0*d0 + d1*d1 + d2*d2))
	}
	// Bucket the edges by quantised weight: deterministic and linear.
	const q = 8
	nb := int(thr*q) + 1
	buckets := make([][]int32, nb) // edge = pixel*2 + (0 right, 1 down)
	for y := range h {
		for x := range w {
			i := y*w + x
			if x+1 < w {
				if e := d(i, i+1); e < thr {
					buckets[int(e*q)] = append(buckets[int(e*q)], int32(2*i))
				}
			}
			if y+1 < h {
				if e := d(i, i+w); e < thr {
					buckets[int(e*q)] = append(buckets[int(e*q)], int32(2*i+1))
				}
			}
		}
	}
	mt2 := meanThr * meanThr
	for _, bk := range buckets {
		for _, e := range bk {
			i := int(e / 2)
			j := i + 1
			if e%2 == 1 {
				j = i + w
			}
			a, b := find(parent, int32(i)), find(parent, int32(j))
			if a == b {
				continue
			}
			sa, sb := sum[a], sum[b]
			na, nb := size[a], size[b]
			var dm float64
			for k := range 3 {
				x := sa[k]/na - sb[k]/nb
				dm += x * x
			}
			if dm >= mt2 {
				continue
			}
			if a > b {
				a, b = b, a
			}
			parent[b] = a
			size[a] += size[b]
			for k := range 3 {
				sum[a][k] += sum[b][k]
			}
		}
	}
	s := &segmentation{w: w, h: h, label: make([]int32, w*h)}
	ids := make(map[int32]int32)
	for i := range parent {
		r := find(parent, int32(i))
		id, ok := ids[r]
		if !ok {
			id = int32(len(ids))
			ids[r] = id
		}
		s.label[i] = id
	}
	s.n = len(ids)
	s.stats = make([]segStats, s.n)
	counts := make([]int32, s.n)
	for i, l := range s.label {
		counts[l]++
		st := &s.stats[l]
		x, y := i%w, i/w
		if st.area == 0 {
			st.minX, st.minY, st.maxX, st.maxY = x, y, x, y
		}
		st.area++
		fx, fy := float64(x), float64(y)
		st.sx += fx
		st.sy += fy
		st.sxx += fx * fx
		st.syy += fy * fy
		st.sxy += fx * fy
		st.minX, st.maxX = min(st.minX, x), max(st.maxX, x)
		st.minY, st.maxY = min(st.minY, y), max(st.maxY, y)
		st.meanL += float64(lab.p[i*3])
		st.meanA += float64(lab.p[i*3+1])
		st.meanB += float64(lab.p[i*3+2])
	}
	s.pixels = make([][]int32, s.n)
	for l := range s.pixels {
		s.pixels[l] = make([]int32, 0, counts[l])
		st := &s.stats[l]
		a := float64(st.area)
		st.meanL, st.meanA, st.meanB = st.meanL/a, st.meanA/a, st.meanB/a
	}
	for i, l := range s.label {
		s.pixels[l] = append(s.pixels[l], int32(i))
	}
	return s
}

// axisOf returns the principal axis angle of a segment, in (-π/2, π/2].
func axisOf(st segStats) float64 {
	a := float64(st.area)
	mx, my := st.sx/a, st.sy/a
	cxx, cyy, cxy := st.sxx/a-mx*mx, st.syy/a-my*my, st.sxy/a-mx*my
	return 0.5 * math.Atan2(2*cxy, cxx-cyy)
}

// extent projects a segment's pixels on an axis through (cx, cy) and returns
// the robust (1%..99%) ranges along (u) and across (v) it.
func (s *segmentation) extent(l int, cx, cy, angle float64) (u0, u1, v0, v1 float64) {
	px := s.pixels[l]
	c, sn := math.Cos(angle), math.Sin(angle)
	us, vs := make([]float64, len(px)), make([]float64, len(px))
	for k, i := range px {
		x, y := float64(int(i)%s.w)+0.5-cx, float64(int(i)/s.w)+0.5-cy
		us[k], vs[k] = x*c+y*sn, -x*sn+y*c
	}
	q := func(a []float64, f float64) float64 { return nth(a, min(len(a)-1, int(f*float64(len(a))))) }
	return q(us, 0.01) - 0.5, q(us, 0.99) + 0.5, q(vs, 0.01) - 0.5, q(vs, 0.99) + 0.5
}

// locate finds the band in a working-size Lab image. It looks for the band's
// ground: a large, elongated, near-horizontal (±50°) region with text and
// ornaments inside, near the centre, then adds the stripes, borders and end
// panels that line up with it.
func locate(lab *raster) box {
	if locateMode == 2 {
		return locateSegments(lab)
	}
	b, q := locateCigar(lab)
	return locateAfterCigar(lab, b, q)
}

// locateAfterCigar is locate once the cigar locator has found b with
// quality q.
func locateAfterCigar(lab *raster, b box, q float64) box {
	if locateMode != 2 && (q >= cigarQuality || locateMode == 1) {
		return b
	}
	return locateSegments(lab)
}

// Tuning knobs (tests change them).
var (
	locateMode   = 0 // 0 both, 1 cigar only, 2 segments only
	cigarQuality = 0.1
)

// locateSegments finds the band by its ground colour region.
func locateSegments(lab *raster) box {
	w, h := lab.w, lab.h
	n := w * h
	smooth := box3(box3(lab))
	seg := segment(smooth, 6, 16)

	type cand struct {
		l              int
		score          float64
		cx, cy, angle  float64
		u0, u1, v0, v1 float64
	}
	var cands []cand
	for l, st := range seg.stats {
		if st.area < n/300 || st.area > n/2 {
			continue
		}
		ang := axisOf(st)
		if math.Abs(ang) > 50*math.Pi/180 {
			continue
		}
		cx, cy := st.sx/float64(st.area), st.sy/float64(st.area)
		u0, u1, v0, v1 := seg.extent(l, cx, cy, ang)
		bw, bh := u1-u0, v1-v0
		if bh < 3 || bw < 10 {
			continue
		}
		aspect := bw / bh
		fill := float64(st.area) / (bw * bh)
		shape := 1.0
		if aspect < 2 {
			shape = math.Pow(aspect/2, 3)
		} else if aspect > 11 {
			shape = 11 / aspect
		}
		fillS := math.Min(1, fill/0.4)
		// Texture: other segments inside the box (glyphs, ornaments).
		inside := map[int32]bool{}
		c, sn := math.Cos(ang), math.Sin(ang)
		for y := max(0, int(cy-bw)); y < min(h, int(cy+bw)+1); y++ {
			for x := max(0, int(cx-bw)); x < min(w, int(cx+bw)+1); x++ {
				dx, dy := float64(x)+0.5-cx, float64(y)+0.5-cy
				u, v := dx*c+dy*sn, -dx*sn+dy*c
				if u > u0 && u < u1 && v > v0 && v < v1 {
					if lb := seg.label[y*w+x]; int(lb) != l {
						if _, seen := inside[lb]; !seen {
							o := seg.stats[lb]
							// Glyphs and ornaments: small, contrasting, wholly inside.
							ok := o.area >= 3 && o.area < st.area/3 &&
								math.Hypot(math.Hypot(o.meanL-st.meanL, o.meanA-st.meanA), o.meanB-st.meanB) > 20
							if ok {
								for _, px := range [][2]int{{o.minX, o.minY}, {o.maxX, o.maxY}, {o.minX, o.maxY}, {o.maxX, o.minY}} {
									ddx, ddy := float64(px[0])+0.5-cx, float64(px[1])+0.5-cy
									uu, vv := ddx*c+ddy*sn, -ddx*sn+ddy*c
									if uu < u0-2 || uu > u1+2 || vv < v0-2 || vv > v1+2 {
										ok = false
									}
								}
							}
							inside[lb] = ok
						}
					}
				}
			}
		}
		glyphs := 0
		for _, ok := range inside {
			if ok {
				glyphs++
			}
		}
		texture := math.Max(0.05, math.Min(1, float64(glyphs)/6))
		mx, my := cx+(u0+u1)/2*c-(v0+v1)/2*sn, cy+(u0+u1)/2*sn+(v0+v1)/2*c
		d := math.Hypot((mx-float64(w)/2)/float64(w), (my-float64(h)/2)/float64(h))
		centre := math.Exp(-d * d / (2 * 0.3 * 0.3))
		size := math.Sqrt(bw * bh / float64(n))
		score := size * shape * fillS * texture * centre
		cands = append(cands, cand{l, score, cx, cy, ang, u0, u1, v0, v1})
	}
	if len(cands) == 0 {
		return box{cx: float64(w) / 2, cy: float64(h) / 2, halfW: 0.3 * float64(w), halfH: 0.3 * float64(w) / 4.5}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	best := cands[0]
	u0, u1, v0, v1 := best.u0, best.u1, best.v0, best.v1

	// Grow the box with segments that line up with it.
	type ext struct{ u0, u1, v0, v1 float64 }
	exts := map[int]ext{}
	minArea := max(6, n/20000)
	for l, st := range seg.stats {
		if l == best.l || st.area < minArea || st.area > n/3 {
			continue
		}
		// Cheap rejection: segments far from the box.
		mx, my := st.sx/float64(st.area), st.sy/float64(st.area)
		if math.Hypot(mx-best.cx, my-best.cy) > 1.5*(u1-u0) {
			continue
		}
		a, b, c, d := seg.extent(l, best.cx, best.cy, best.angle)
		exts[l] = ext{a, b, c, d}
	}
	keys := make([]int, 0, len(exts))
	for l := range exts {
		keys = append(keys, l)
	}
	sort.Ints(keys)
	used := map[int]bool{}
	for range 4 {
		changed := false
		for _, l := range keys {
			if used[l] {
				continue
			}
			e := exts[l]
			bw, bh := u1-u0, v1-v0
			ew, eh := e.u1-e.u0, e.v1-e.v0
			overU := math.Min(u1, e.u1) - math.Max(u0, e.u0)
			overV := math.Min(v1, e.v1) - math.Max(v0, e.v0)
			// A stripe or border: as long as the band, thin, just above or below.
			stripe := overU > 0.75*ew && overU > 0.6*bw && eh < 0.45*bh &&
				e.v0 > v0-0.5*bh && e.v1 < v1+0.5*bh
			// An end panel: as high as the band, just left or right of it.
			panel := overV > 0.7*bh && eh < 1.3*bh && ew < 0.45*bw &&
				e.u0 > u0-0.06*bw-ew && e.u1 < u1+0.06*bw+ew
			if stripe || panel {
				nu0, nu1, nv0, nv1 := math.Min(u0, e.u0), math.Max(u1, e.u1), math.Min(v0, e.v0), math.Max(v1, e.v1)
				if (nu1-nu0)/(nv1-nv0) < 1.8 {
					continue
				}
				u0, u1, v0, v1 = nu0, nu1, nv0, nv1
				used[l] = true
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	b := box{angle: best.angle, halfW: (u1 - u0) / 2, halfH: (v1 - v0) / 2}
	b.cx, b.cy = best.cx, best.cy
	b.cx, b.cy = b.point((u0+u1)/2, (v0+v1)/2)
	second := 0.0
	if len(cands) > 1 {
		second = cands[1].score
	}
	b.conf = math.Min(1, best.score/0.12) * (1 - 0.5*second/best.score)
	return b
}
