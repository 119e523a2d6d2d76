package bandart

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"math"
	"math/rand/v2"
)

// Level is how hard a synthetic photo is.
type Level int

// Levels.
const (
	// Studio is a clean, frontal photo of the band on a cigar: fixed
	// curvature, plain background, no noise. Useful as evidence.
	Studio Level = iota
	// Mild is a careful hand-held photo: small rotation and perspective,
	// moderate curvature, a little blur and noise, good JPEG.
	Mild
	// Strong is a careless photo: up to ±25° rotation, strong perspective and
	// curvature, part of the band out of frame, blur, harsh light, colour
	// cast, noise, low JPEG quality, a busy background.
	Strong
	// Medium lies between Mild and Strong: an everyday photo (up to ±16°,
	// some perspective and crop, moderate blur, JPEG 50–80). It comes last
	// so that the other levels keep their values, and with them their seeds
	// and photos.
	Medium
)

// String names the level.
func (l Level) String() string { return [...]string{"studio", "mild", "strong", "medium"}[l] }

// PhotoWidth and PhotoHeight are the size of a synthetic photo (0.69 MP).
const (
	PhotoWidth  = 960
	PhotoHeight = 720
)

// photoParams are the random choices behind one photo.
type photoParams struct {
	angle        float64 // band rotation, radians
	cx, cy       float64 // band centre, pixels
	appW         float64 // apparent width of the design, pixels
	thetaMax     float64 // half the arc the design spans on the cigar (at most 90°: the front face), radians
	theta0       float64 // the band's centre turned away from the camera, radians
	kx, ky       float64 // perspective
	light        float64 // light direction around the cigar, radians
	ambient      float64 // shade in the dark side, 0..1
	specular     float64
	brightness   float64
	contrast     float64
	cast         [3]float64
	gradient     float64
	gradAngle    float64
	blur         float64 // gaussian sigma, pixels
	noise        float64 // gaussian sigma, 0..255
	quality      int     // JPEG quality
	clutter      int     // background shapes
	cigar        color.RGBA
	bg0, bg1     color.RGBA
	clutterSat   float64
	cropFraction float64
}

func uni(r *rand.Rand, a, b float64) float64 { return a + (b-a)*r.Float64() }

func sym(r *rand.Rand, a float64) float64 { return uni(r, -a, a) }

// levelRange is how far a level perturbs a photo: each photo draws its own
// values within these ranges (a single number x is the range -x to x; a pair
// of ints is a base and the spread added to it).
type levelRange struct {
	angle          float64    // degrees
	shiftX, shiftY float64    // pixels
	appW           [2]float64 // of the photo's width
	thetaMax       [2]float64 // degrees of the cigar's circumference seen
	theta0, skew   float64
	light          float64
	ambient        [2]float64
	specular       float64
	brightness     [2]float64
	contrast       [2]float64
	cast           float64 // each channel's gain, about 1
	gradient       [2]float64
	blur, noise    [2]float64
	quality        [2]int // JPEG quality
	clutter        [2]int // objects in the background
	clutterSat     float64
	cropChance     float64
	crop           [2]float64
}

var levelRanges = map[Level]levelRange{
	Mild: {angle: 8, shiftX: 0.06 * PhotoWidth, shiftY: 0.08 * PhotoHeight, appW: [2]float64{0.4, 0.62}, thetaMax: [2]float64{76, 90},
		theta0: 0.08, skew: 0.05, light: 0.3, ambient: [2]float64{0.5, 0.7}, specular: 0.15,
		brightness: [2]float64{0.85, 1.15}, contrast: [2]float64{0.85, 1.1}, cast: 0.06, gradient: [2]float64{0, 0.15},
		blur: [2]float64{0.3, 1.0}, noise: [2]float64{1, 4}, quality: [2]int{70, 21}, clutter: [2]int{8, 12}, clutterSat: 0.4,
		cropChance: 0.2, crop: [2]float64{0, 0.08}},
	Medium: {angle: 16, shiftX: 0.09 * PhotoWidth, shiftY: 0.11 * PhotoHeight, appW: [2]float64{0.36, 0.66}, thetaMax: [2]float64{71, 90},
		theta0: 0.14, skew: 0.09, light: 0.5, ambient: [2]float64{0.4, 0.65}, specular: 0.22,
		brightness: [2]float64{0.72, 1.22}, contrast: [2]float64{0.78, 1.15}, cast: 0.1, gradient: [2]float64{0.05, 0.28},
		blur: [2]float64{0.55, 1.6}, noise: [2]float64{2, 6.5}, quality: [2]int{50, 31}, clutter: [2]int{15, 20}, clutterSat: 0.7,
		cropChance: 0.35, crop: [2]float64{0.02, 0.16}},
	Strong: {angle: 25, shiftX: 0.12 * PhotoWidth, shiftY: 0.15 * PhotoHeight, appW: [2]float64{0.32, 0.7}, thetaMax: [2]float64{66, 90},
		theta0: 0.2, skew: 0.14, light: 0.7, ambient: [2]float64{0.3, 0.6}, specular: 0.3,
		brightness: [2]float64{0.6, 1.3}, contrast: [2]float64{0.7, 1.2}, cast: 0.15, gradient: [2]float64{0.1, 0.4},
		blur: [2]float64{0.8, 2.2}, noise: [2]float64{3, 9}, quality: [2]int{30, 31}, clutter: [2]int{25, 30}, clutterSat: 1,
		cropChance: 0.5, crop: [2]float64{0.05, 0.25}},
}

func paramsFor(level Level, r *rand.Rand) photoParams {
	p := photoParams{cx: PhotoWidth / 2, cy: PhotoHeight / 2, ambient: 0.6, brightness: 1, contrast: 1,
		cast: [3]float64{1, 1, 1}, quality: 95, thetaMax: 84 * math.Pi / 180, appW: 0.62 * PhotoWidth}
	browns := []color.RGBA{rgb(150, 100, 60), rgb(120, 78, 45), rgb(90, 58, 34), rgb(62, 40, 26), rgb(170, 128, 80)}
	p.cigar = browns[r.IntN(len(browns))]
	switch level {
	case Studio:
		p.bg0, p.bg1 = rgb(200, 200, 198), rgb(170, 170, 168)
		p.specular = 0.05
	default:
		l := levelRanges[level]
		p.angle = sym(r, l.angle) * math.Pi / 180
		p.cx += sym(r, l.shiftX)
		p.cy += sym(r, l.shiftY)
		p.appW = uni(r, l.appW[0], l.appW[1]) * PhotoWidth
		p.thetaMax = uni(r, l.thetaMax[0], l.thetaMax[1]) * math.Pi / 180
		p.theta0 = sym(r, l.theta0)
		p.kx, p.ky = sym(r, l.skew), sym(r, l.skew)
		p.light = sym(r, l.light)
		p.ambient = uni(r, l.ambient[0], l.ambient[1])
		p.specular = uni(r, 0, l.specular)
		p.brightness = uni(r, l.brightness[0], l.brightness[1])
		p.contrast = uni(r, l.contrast[0], l.contrast[1])
		for i := range p.cast {
			p.cast[i] = uni(r, 1-l.cast, 1+l.cast)
		}
		p.gradient = uni(r, l.gradient[0], l.gradient[1])
		p.gradAngle = uni(r, 0, 2*math.Pi)
		p.blur = uni(r, l.blur[0], l.blur[1])
		p.noise = uni(r, l.noise[0], l.noise[1])
		p.quality = l.quality[0] + r.IntN(l.quality[1])
		p.clutter = l.clutter[0] + r.IntN(l.clutter[1])
		p.clutterSat = l.clutterSat
		if r.Float64() < l.cropChance {
			p.cropFraction = uni(r, l.crop[0], l.crop[1])
		}
	}
	if level != Studio {
		bgs := []color.RGBA{rgb(210, 200, 185), rgb(90, 70, 55), rgb(60, 60, 65), rgb(230, 230, 228), rgb(140, 110, 80), rgb(40, 50, 45)}
		p.bg0 = jitter(r, bgs[r.IntN(len(bgs))], 20)
		p.bg1 = jitter(r, bgs[r.IntN(len(bgs))], 20)
	}
	// Crop: push one end of the band out of the frame along its axis.
	if p.cropFraction > 0 {
		side := 1.0
		if r.Float64() < 0.5 {
			side = -1
		}
		// Distance from the band centre to the frame edge along the axis.
		ca, sa := math.Abs(math.Cos(p.angle)), math.Abs(math.Sin(p.angle))
		reach := PhotoWidth / 2 / math.Max(ca, 1e-3)
		if sa > 1e-3 {
			reach = math.Min(reach, PhotoHeight/2/sa)
		}
		// The band spans the cigar's whole width, its diameter.
		diam := p.appW / math.Sin(p.thetaMax)
		shift := reach - diam/2 + p.cropFraction*diam
		if shift > 0 {
			p.cx = PhotoWidth/2 + side*shift*math.Cos(p.angle)
			p.cy = PhotoHeight/2 + side*shift*math.Sin(p.angle)
		}
	}
	return p
}

// StudioPhoto is the band of a brand's line, rendered 800 px wide and
// photographed in studio conditions (Studio, seed 1): the picture to build
// evidence from.
func StudioPhoto(brand, line string) *image.RGBA {
	return Photo(Render(DesignFor(brand, line), 800), Studio, 1)
}

// Truth is where the band is in a synthetic photo.
type Truth struct {
	// Corners of the band's visible part (cigar silhouette to silhouette),
	// in pixels: top-left, top-right, bottom-right, bottom-left, as seen
	// upright. They may lie outside the photo.
	Corners [4][2]float64
	// Angle is the band's rotation, degrees clockwise.
	Angle float64
}

// Photo wraps a flat band (as Render draws it) around a cigar and returns a
// synthetic photograph of it, PhotoWidth x PhotoHeight. The same band, level
// and seed always give the same photo.
func Photo(band image.Image, level Level, seed int64) *image.RGBA {
	img, _ := PhotoWithTruth(band, level, seed)
	return img
}

// PhotoWithTruth is Photo, also returning where the band is.
func PhotoWithTruth(band image.Image, level Level, seed int64) (*image.RGBA, Truth) {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(level)*0x9e3779b97f4a7c15+1))
	p := paramsFor(level, r)
	out := image.NewRGBA(image.Rect(0, 0, PhotoWidth, PhotoHeight))
	background(out, p, r)

	// Geometry: the cigar's radius follows from the band's apparent width.
	R := p.appW / (2 * math.Sin(p.thetaMax))
	arcPx := 2 * p.thetaMax * R
	bandH := arcPx / float64(band.Bounds().Dx()) * float64(band.Bounds().Dy())
	flat := resizeArea(toRGBA(band), max(2, int(arcPx)), max(2, int(bandH)))
	fw, fh := float64(flat.Rect.Dx()), float64(flat.Rect.Dy())
	ca, sa := math.Cos(p.angle), math.Sin(p.angle)
	kx, ky := p.kx/(PhotoWidth/2), p.ky/(PhotoHeight/2)
	cig := [3]float64{float64(p.cigar.R), float64(p.cigar.G), float64(p.cigar.B)}
	veinSeed := r.Float64() * 100
	var truth Truth
	truth.Angle = p.angle * 180 / math.Pi
	for i, c := range [4][2]float64{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}} {
		lx, ly := c[0]*R, c[1]*bandH/2
		dx, dy := ca*lx-sa*ly, sa*lx+ca*ly
		lam := 1 / (1 - kx*dx - ky*dy)
		truth.Corners[i] = [2]float64{p.cx + lam*dx, p.cy + lam*dy}
	}

	for y := range PhotoHeight {
		for x := range PhotoWidth {
			dx, dy := float64(x)+0.5-p.cx, float64(y)+0.5-p.cy
			// Perspective, then undo the rotation.
			w := 1 + kx*dx + ky*dy
			dx, dy = dx/w, dy/w
			lx, ly := ca*dx+sa*dy, -sa*dx+ca*dy
			if math.Abs(lx) >= R {
				continue
			}
			th := math.Asin(lx / R)
			shade := p.ambient + (1-p.ambient)*math.Max(0, math.Cos(th-p.light))
			var c [3]float64
			s := (th - p.theta0) / p.thetaMax // -1..1 across the band
			v := ly/bandH + 0.5
			if v >= 0 && v < 1 {
				// Beyond the design's arc the band goes on round the cigar:
				// continue it with the colour just inside its ends.
				if s > 0.94 && s >= 1 {
					s = 0.94
				} else if s <= -1 {
					s = -0.94
				}
				c = bilinear(flat, (s+1)/2*fw, v*fh)
				spec := p.specular * 255 * math.Exp(-sq((th-p.light*0.5+0.3)/0.12))
				for i := range c {
					c[i] = c[i]*shade + spec
				}
			} else {
				vein := 1 + 0.07*math.Sin(ly*0.045+3*math.Sin(th*4+veinSeed)) + 0.04*math.Sin(th*37+ly*0.01)
				for i := range c {
					c[i] = cig[i] * shade * vein
				}
			}
			o := out.PixOffset(x, y)
			out.Pix[o], out.Pix[o+1], out.Pix[o+2] = clamp8(c[0]), clamp8(c[1]), clamp8(c[2])
		}
	}
	if level != Studio {
		lighting(out, p)
		if p.blur > 0 {
			gaussianBlur(out, p.blur)
		}
		addNoise(out, p.noise, r)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: p.quality}); err != nil {
		return out, truth
	}
	dec, err := jpeg.Decode(&buf)
	if err != nil {
		return out, truth
	}
	return toRGBA(dec), truth
}

func sq(x float64) float64 { return x * x }

func clamp8(v float64) uint8 {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(v + 0.5)
}

func toRGBA(m image.Image) *image.RGBA {
	if r, ok := m.(*image.RGBA); ok && r.Rect.Min == (image.Point{}) {
		return r
	}
	b := m.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, m, b.Min, draw.Src)
	return out
}

// background paints a table-like gradient and random clutter.
func background(out *image.RGBA, p photoParams, r *rand.Rand) {
	for y := range PhotoHeight {
		t := float64(y) / PhotoHeight
		c := color.RGBA{
			uint8(float64(p.bg0.R)*(1-t) + float64(p.bg1.R)*t),
			uint8(float64(p.bg0.G)*(1-t) + float64(p.bg1.G)*t),
			uint8(float64(p.bg0.B)*(1-t) + float64(p.bg1.B)*t), 255}
		for x := range PhotoWidth {
			o := out.PixOffset(x, y)
			out.Pix[o], out.Pix[o+1], out.Pix[o+2], out.Pix[o+3] = c.R, c.G, c.B, 255
		}
	}
	cv := &canvas{img: out, w: PhotoWidth, h: PhotoHeight}
	for range p.clutter {
		col := randomColor(r, p.clutterSat)
		x, y := r.Float64()*PhotoWidth, r.Float64()*PhotoHeight
		s := uni(r, 20, 220)
		switch r.IntN(4) {
		case 0:
			cv.rect(x, y, x+s*uni(r, 0.3, 2), y+s*uni(r, 0.3, 2), col)
		case 1:
			cv.ellipse(x, y, s/2, s/2*uni(r, 0.4, 1.6), col)
		case 2: // thick line
			a := r.Float64() * math.Pi
			t := uni(r, 2, 12)
			ex, ey := x+s*2*math.Cos(a), y+s*2*math.Sin(a)
			cv.fill(math.Min(x, ex)-t, math.Min(y, ey)-t, math.Max(x, ex)+t, math.Max(y, ey)+t, func(px, py float64) bool {
				return segDist(px, py, x, y, ex, ey) < t
			}, col)
		case 3: // stripes, like a cloth or a book spine
			t := uni(r, 4, 14)
			col2 := randomColor(r, p.clutterSat)
			cv.fill(x, y, x+s*1.5, y+s, func(px, py float64) bool { return math.Mod(px-x, 2*t) < t }, col)
			cv.fill(x, y, x+s*1.5, y+s, func(px, py float64) bool { return math.Mod(px-x, 2*t) >= t }, col2)
		}
	}
}

func segDist(px, py, ax, ay, bx, by float64) float64 {
	vx, vy := bx-ax, by-ay
	t := ((px-ax)*vx + (py-ay)*vy) / (vx*vx + vy*vy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(px-ax-t*vx, py-ay-t*vy)
}

func randomColor(r *rand.Rand, sat float64) color.RGBA {
	h := r.Float64() * 6
	s := r.Float64() * sat
	v := uni(r, 0.2, 0.95)
	i := int(h)
	f := h - float64(i)
	pv, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	var rr, gg, bb float64
	switch i % 6 {
	case 0:
		rr, gg, bb = v, t, pv
	case 1:
		rr, gg, bb = q, v, pv
	case 2:
		rr, gg, bb = pv, v, t
	case 3:
		rr, gg, bb = pv, q, v
	case 4:
		rr, gg, bb = t, pv, v
	default:
		rr, gg, bb = v, pv, q
	}
	return color.RGBA{clamp8(rr * 255), clamp8(gg * 255), clamp8(bb * 255), 255}
}

func lighting(out *image.RGBA, p photoParams) {
	gx, gy := math.Cos(p.gradAngle), math.Sin(p.gradAngle)
	for y := range PhotoHeight {
		for x := range PhotoWidth {
			t := ((float64(x)/PhotoWidth-0.5)*gx + (float64(y)/PhotoHeight-0.5)*gy) * 2
			g := p.brightness * (1 + p.gradient*t)
			o := out.PixOffset(x, y)
			for i := range 3 {
				v := float64(out.Pix[o+i])
				v = ((v-128)*p.contrast + 128) * g * p.cast[i]
				out.Pix[o+i] = clamp8(v)
			}
		}
	}
}

func addNoise(out *image.RGBA, sigma float64, r *rand.Rand) {
	if sigma <= 0 {
		return
	}
	for i := 0; i < len(out.Pix); i += 4 {
		for k := range 3 {
			out.Pix[i+k] = clamp8(float64(out.Pix[i+k]) + r.NormFloat64()*sigma)
		}
	}
}

func gaussianBlur(img *image.RGBA, sigma float64) {
	rad := int(math.Ceil(sigma * 2.5))
	k := make([]float64, 2*rad+1)
	var sum float64
	for i := range k {
		d := float64(i - rad)
		k[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	tmp := make([]float64, w*h*3)
	for y := range h {
		for x := range w {
			var a [3]float64
			for j, kv := range k {
				xx := min(w-1, max(0, x+j-rad))
				o := img.PixOffset(xx, y)
				a[0] += kv * float64(img.Pix[o])
				a[1] += kv * float64(img.Pix[o+1])
				a[2] += kv * float64(img.Pix[o+2])
			}
			copy(tmp[(y*w+x)*3:], a[:])
		}
	}
	for y := range h {
		for x := range w {
			var a [3]float64
			for j, kv := range k {
				yy := min(h-1, max(0, y+j-rad))
				t := tmp[(yy*w+x)*3:]
				a[0] += kv * t[0]
				a[1] += kv * t[1]
				a[2] += kv * t[2]
			}
			o := img.PixOffset(x, y)
			img.Pix[o], img.Pix[o+1], img.Pix[o+2] = clamp8(a[0]), clamp8(a[1]), clamp8(a[2])
		}
	}
}

func bilinear(m *image.RGBA, x, y float64) [3]float64 {
	x -= 0.5
	y -= 0.5
	w, h := m.Rect.Dx(), m.Rect.Dy()
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := x-float64(x0), y-float64(y0)
	cl := func(v, n int) int { return min(n-1, max(0, v)) }
	xa, xb, ya, yb := cl(x0, w), cl(x0+1, w), cl(y0, h), cl(y0+1, h)
	var c [3]float64
	for i := range 3 {
		a := float64(m.Pix[m.PixOffset(xa, ya)+i])*(1-fx) + float64(m.Pix[m.PixOffset(xb, ya)+i])*fx
		b := float64(m.Pix[m.PixOffset(xa, yb)+i])*(1-fx) + float64(m.Pix[m.PixOffset(xb, yb)+i])*fx
		c[i] = a*(1-fy) + b*fy
	}
	return c
}

// resizeArea resamples src to w x h by area averaging (for shrinking) or
// bilinear interpolation (for enlarging).
func resizeArea(src *image.RGBA, w, h int) *image.RGBA {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	if w >= sw || h >= sh {
		for y := range h {
			for x := range w {
				c := bilinear(src, (float64(x)+0.5)*float64(sw)/float64(w), (float64(y)+0.5)*float64(sh)/float64(h))
				o := dst.PixOffset(x, y)
				dst.Pix[o], dst.Pix[o+1], dst.Pix[o+2], dst.Pix[o+3] = clamp8(c[0]), clamp8(c[1]), clamp8(c[2]), 255
			}
		}
		return dst
	}
	for y := range h {
		y0, y1 := y*sh/h, max(y*sh/h+1, (y+1)*sh/h)
		for x := range w {
			x0, x1 := x*sw/w, max(x*sw/w+1, (x+1)*sw/w)
			var a [3]int
			for yy := y0; yy < y1; yy++ {
				o := src.PixOffset(x0, yy)
				for xx := x0; xx < x1; xx++ {
					a[0] += int(src.Pix[o])
					a[1] += int(src.Pix[o+1])
					a[2] += int(src.Pix[o+2])
					o += 4
				}
			}
			n := (y1 - y0) * (x1 - x0)
			o := dst.PixOffset(x, y)
			dst.Pix[o], dst.Pix[o+1], dst.Pix[o+2], dst.Pix[o+3] = uint8(a[0]/n), uint8(a[1]/n), uint8(a[2]/n), 255
		}
	}
	return dst
}
