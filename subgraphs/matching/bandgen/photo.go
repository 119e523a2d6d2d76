package bandgen

import (
	"bytes"
	"hash/fnv"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
)

// Level is how hard a photo is.
type Level int

// Levels.
const (
	// Mild: a careful photo; small tilt and perspective, soft light, a
	// fingertip now and then at the band's end, JPEG 80–95.
	Mild Level = iota
	// Medium: an everyday photo; tilted, some perspective, uneven light and
	// glare on the foil, blur, often a finger on the band, JPEG 55–80.
	Medium
	// Strong: a careless photo; steep tilt and perspective, harsh light and
	// colour cast, heavy blur and noise, fingers across the band, one end
	// out of frame, JPEG 25–55.
	Strong
)

// Levels lists them, mildest first.
var Levels = []Level{Mild, Medium, Strong}

// String names the level.
func (l Level) String() string { return [...]string{"mild", "medium", "strong"}[l] }

// shot is the random choices behind one photo.
type shot struct {
	w, h        int
	onCigar     bool
	angle       float64 // the band's axis (its long side) from horizontal, radians
	cx, cy      float64 // band centre
	bandW       float64 // the band's apparent width (front face), pixels
	arc         float64 // half the arc the design spans round the cigar
	turn        float64 // the band's centre turned from the camera
	kx, ky      float64 // perspective
	lightDir    float64 // around the cigar / across the table
	ambient     float64
	glare       float64 // specular on foil and wrapper
	exposure    float64
	cast        [3]float64
	vignette    float64
	blur        float64
	noise       float64
	quality     int
	bg          int
	bgTint      rgbf
	wrapper     rgbf
	fingers     int
	fingerReach float64 // how far over the band a finger reaches, in band heights
}

func uni(r *rand.Rand, a, b float64) float64 { return a + (b-a)*r.Float64() }

var wrappers = []rgbf{hex(0x8a5a32), hex(0x6b4226), hex(0x4a2e1c), hex(0x3a2418), hex(0xa87a4c), hex(0x7c6a3a)}

var tints = []rgbf{hex(0x9b7653), hex(0xd9d4c7), hex(0x3f3a36), hex(0x5d6f7a), hex(0xb8a98f), hex(0x2e3b2f), hex(0x7a2f2a), hex(0xeeeeea)}

func shotFor(level Level, r *rand.Rand) shot {
	sizes := [][2]int{{960, 720}, {800, 800}, {1024, 640}, {720, 960}}
	sz := sizes[r.IntN(len(sizes))]
	s := shot{w: sz[0], h: sz[1], onCigar: r.Float64() < 0.65, cast: [3]float64{1, 1, 1}, exposure: 1,
		bg: r.IntN(5), bgTint: tints[r.IntN(len(tints))], wrapper: wrappers[r.IntN(len(wrappers))]}
	s.cx, s.cy = float64(s.w)/2, float64(s.h)/2
	fw := float64(min(s.w, s.h*4/3))
	type span struct{ a, b float64 }
	pick := func(sp span) float64 { return uni(r, sp.a, sp.b) }
	// Ranges by level: mild, medium, strong.
	rng := func(m, md, st span) float64 { return pick([]span{m, md, st}[level]) }
	s.angle = rng(span{-8, 8}, span{-20, 20}, span{-35, 35}) * math.Pi / 180
	s.bandW = rng(span{0.55, 0.75}, span{0.42, 0.68}, span{0.3, 0.62}) * fw
	s.cx += rng(span{-0.04, 0.04}, span{-0.08, 0.08}, span{-0.14, 0.14}) * float64(s.w)
	s.cy += rng(span{-0.05, 0.05}, span{-0.1, 0.1}, span{-0.16, 0.16}) * float64(s.h)
	s.arc = rng(span{70, 85}, span{64, 85}, span{58, 85}) * math.Pi / 180
	s.turn = rng(span{-0.05, 0.05}, span{-0.12, 0.12}, span{-0.22, 0.22})
	p := rng(span{0, 0.03}, span{0.02, 0.08}, span{0.05, 0.15})
	a := r.Float64() * 2 * math.Pi
	s.kx, s.ky = p*math.Cos(a), p*math.Sin(a)
	s.lightDir = rng(span{-0.3, 0.3}, span{-0.6, 0.6}, span{-1, 1})
	s.ambient = rng(span{0.6, 0.75}, span{0.45, 0.65}, span{0.3, 0.55})
	s.glare = rng(span{0, 0.2}, span{0.1, 0.45}, span{0.2, 0.7})
	s.exposure = rng(span{0.92, 1.1}, span{0.8, 1.2}, span{0.6, 1.3})
	c := rng(span{0, 0.04}, span{0.03, 0.08}, span{0.06, 0.16})
	for i := range s.cast {
		s.cast[i] = 1 + uni(r, -c, c)
	}
	s.vignette = rng(span{0, 0.15}, span{0.1, 0.3}, span{0.2, 0.5})
	s.blur = rng(span{0.2, 0.7}, span{0.6, 1.3}, span{1.0, 2.2})
	s.noise = rng(span{1, 3}, span{2, 6}, span{4, 10})
	s.quality = int(rng(span{80, 95}, span{55, 80}, span{25, 55}))
	chance := []float64{0.2, 0.5, 0.8}[level]
	if r.Float64() < chance {
		s.fingers = 1
		if level == Strong && r.Float64() < 0.4 {
			s.fingers = 2
		}
		s.fingerReach = rng(span{0.1, 0.3}, span{0.2, 0.6}, span{0.3, 1.1})
	}
	// Strong photos often leave one end of the band out of frame.
	if level == Strong && r.Float64() < 0.4 {
		out := uni(r, 0.03, 0.12) * s.bandW
		side := 1.0
		if r.IntN(2) == 0 {
			side = -1
		}
		reach := math.Min(float64(s.w)/2/math.Max(0.2, math.Abs(math.Cos(s.angle))), float64(s.h)/2/math.Max(0.2, math.Abs(math.Sin(s.angle))))
		shift := reach - s.bandW/2 + out
		if shift > 0 {
			s.cx = float64(s.w)/2 + side*shift*math.Cos(s.angle)
			s.cy = float64(s.h)/2 + side*shift*math.Sin(s.angle)
		}
	}
	return s
}

// Photo photographs the line's band at a level (the same line, level and
// seed, the same photo; another line with the same seed is photographed
// otherwise) and answers it as a JPEG file.
func (l Line) Photo(level Level, seed uint64) []byte {
	h := fnv.New64a()
	h.Write([]byte(l.Brand + "\x00" + l.Name))
	r := rand.New(rand.NewPCG(seed^h.Sum64(), 0x70686f746f+uint64(level)))
	s := shotFor(level, r)
	design := l.d.render(1200)
	img := s.scene(design, r)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: s.quality}); err != nil {
		panic("bandgen: jpeg: " + err.Error())
	}
	return buf.Bytes()
}

// PhotoImage is Photo decoded.
func (l Line) PhotoImage(level Level, seed uint64) image.Image {
	img, err := jpeg.Decode(bytes.NewReader(l.Photo(level, seed)))
	if err != nil {
		panic("bandgen: jpeg: " + err.Error())
	}
	return img
}

// sample reads the design at (u, v) in 0..1 (bilinear), with its metal.
func (d *surface) sample(u, v float64) (rgbf, float32) {
	x := u*float64(d.w) - 0.5
	y := v*float64(d.h) - 0.5
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	fx, fy := float32(x-float64(x0)), float32(y-float64(y0))
	at := func(x, y int) (rgbf, float32) {
		x = min(max(x, 0), d.w-1)
		y = min(max(y, 0), d.h-1)
		i := y*d.w + x
		return rgbf{d.rgb[3*i], d.rgb[3*i+1], d.rgb[3*i+2]}, d.metal[i]
	}
	a, ma := at(x0, y0)
	b, mb := at(x0+1, y0)
	c, mc := at(x0, y0+1)
	e, me := at(x0+1, y0+1)
	top, bot := mix(a, b, fx), mix(c, e, fx)
	return mix(top, bot, fy), (ma*(1-fx)+mb*fx)*(1-fy) + (mc*(1-fx)+me*fx)*fy
}

// background is the table or cloth behind the band at (x, y).
func (s shot) background(x, y float64, seed float64) rgbf {
	t := s.bgTint
	switch s.bg {
	case 0: // wood grain along a slant
		u := x*0.8 + y*0.3
		g := 0.85 + 0.1*math.Sin(u*0.05+4*math.Sin(y*0.013+seed)) + 0.05*math.Sin(u*0.4)
		return t.scale(float32(g))
	case 1: // linen weave
		g := 0.9 + 0.05*math.Sin(x*1.3)*math.Sin(y*1.1) + 0.04*math.Sin(x*0.07+seed)
		return t.scale(float32(g))
	case 2: // marble veins
		v := math.Abs(math.Sin(x*0.01 + 3*math.Sin(y*0.015+seed) + 1.5*math.Sin(x*0.004)))
		return mix(t, hex(0xf2f0ea), float32(0.6+0.4*v))
	case 3: // checked cloth
		c := (int(math.Floor(x/48))+int(math.Floor(y/48)))%2 == 0
		if c {
			return t
		}
		return mix(t, hex(0xf5f5f0), 0.7)
	default: // plain with a soft fall-off
		d := math.Hypot(x-float64(s.w)*0.3, y-float64(s.h)*0.2) / float64(s.w)
		return t.scale(float32(1.05 - 0.3*d))
	}
}

// finger is a capsule from outside the frame to a tip over the band.
type finger struct{ ax, ay, bx, by, r float64 }

var skins = []rgbf{hex(0xe8b896), hex(0xc68e6a), hex(0x8d5a3c), hex(0xf1cdb0), hex(0x5c3a26)}

func (s shot) scene(design *surface, r *rand.Rand) *image.RGBA {
	W, H := s.w, s.h
	ca, sa := math.Cos(s.angle), math.Sin(s.angle)
	aspect := float64(design.w) / float64(design.h)
	// On a cigar the design spans 2·arc of a cylinder of radius R whose
	// visible width is bandW; flat, it is a bandW-wide rectangle.
	R := s.bandW / 2 / math.Sin(s.arc)
	bandH := 2 * s.arc * R / aspect
	if !s.onCigar {
		bandH = s.bandW / aspect
	}
	var fingers []finger
	skin := skins[r.IntN(len(skins))]
	lastSide := 1.0
	for i := 0; i < s.fingers; i++ {
		// A finger either covers an end of the band, coming along it from
		// the side (the hand holding the cigar there), or presses on it from
		// above or below (a thumb).
		fr := bandH * uni(r, 0.45, 0.6)
		length := float64(W + H)
		side := 1.0
		if r.IntN(2) == 0 {
			side = -1
		}
		if i == 1 { // a second finger holds the other end
			side = -lastSide
		}
		lastSide = side
		var tipU, tipV, dir float64
		if r.IntN(3) > 0 {
			tipU = side * (s.bandW/2 - s.fingerReach*bandH)
			tipV = uni(r, -0.3, 0.3) * bandH
			dir = math.Pi*(1-side)/2 + uni(r, -0.4, 0.4)
		} else {
			tipU = uni(r, -0.4, 0.4) * s.bandW
			tipV = side * (bandH/2 - s.fingerReach*bandH)
			dir = side*math.Pi/2 + uni(r, -0.5, 0.5)
		}
		fingers = append(fingers, finger{ax: tipU + length*math.Cos(dir), ay: tipV + length*math.Sin(dir), bx: tipU, by: tipV, r: fr})
	}
	seed := r.Float64() * 10
	kx, ky := s.kx/(float64(W)/2), s.ky/(float64(H)/2)
	out := image.NewRGBA(image.Rect(0, 0, W, H))
	shadowOff := bandH * 0.06
	for py := 0; py < H; py++ {
		for px := 0; px < W; px++ {
			dx, dy := float64(px)+0.5-float64(W)/2, float64(py)+0.5-float64(H)/2
			w := 1 + kx*dx + ky*dy
			sx, sy := dx/w+float64(W)/2, dy/w+float64(H)/2
			// Band coordinates: along its long side (u), across (v).
			ox, oy := sx-s.cx, sy-s.cy
			u, v := ca*ox+sa*oy, -sa*ox+ca*oy
			var c rgbf
			covered := false
			for _, f := range fingers {
				d, t := segDist(u, v, f.ax, f.ay, f.bx, f.by)
				if d < f.r {
					// Round across the finger, a lighter nail at the tip.
					k := float32(0.75 + 0.3*math.Sqrt(1-d*d/(f.r*f.r)))
					c = skin.scale(k)
					if t < f.r*1.4/math.Hypot(f.ax-f.bx, f.ay-f.by) && d < f.r*0.6 {
						c = mix(c, hex(0xf4d9cc), 0.6)
					}
					covered = true
					break
				}
			}
			if !covered {
				c = s.surface(design, u, v, R, bandH, sx, sy, seed, shadowOff)
			}
			// Light: exposure, cast, vignette.
			vg := 1 - s.vignette*(dx*dx+dy*dy)/(float64(W*W+H*H)/4)
			o := out.PixOffset(px, py)
			for i := range 3 {
				out.Pix[o+i] = u8(float32(float64(c[i]) * s.exposure * s.cast[i] * vg))
			}
			out.Pix[o+3] = 255
		}
	}
	if s.blur > 0 {
		blur(out, s.blur)
	}
	for i := 0; i < len(out.Pix); i += 4 {
		n := r.NormFloat64() * s.noise
		for k := range 3 {
			out.Pix[i+k] = u8(float32(float64(out.Pix[i+k]) + n + r.NormFloat64()*s.noise*0.4))
		}
	}
	return out
}

// surface is what the camera sees at band coordinates (u, v): the band on
// its cigar or flat on the table, the cigar, or the background.
func (s shot) surface(design *surface, u, v, R, bandH, sx, sy, seed, shadowOff float64) rgbf {
	if s.onCigar {
		if math.Abs(v) < 7*R && math.Abs(u) < R {
			// The cigar runs across the band (along v); u is across the cigar.
			th := math.Asin(u / R)
			shade := s.ambient + (1-s.ambient)*math.Max(0, math.Cos(th-s.lightDir))
			spec := s.glare * math.Exp(-sq((th-s.lightDir*0.5-0.25)/0.15))
			if math.Abs(v) < bandH/2 {
				t := (th - s.turn) / s.arc
				t = math.Max(-0.97, math.Min(0.97, t))
				c, m := design.sample((t+1)/2, v/bandH+0.5)
				g := float32(shade) + float32(spec)*(0.3+1.5*m)*float32(1+m)
				return rgbf{c[0]*g + float32(spec*60)*m, c[1]*g + float32(spec*55)*m, c[2]*g + float32(spec*40)*m}
			}
			vein := 1 + 0.06*math.Sin(v*0.05+3*math.Sin(th*5+seed)) + 0.03*math.Sin(th*41+v*0.02)
			return s.wrapper.scale(float32(shade*vein + spec*0.4))
		}
		// Beyond the cigar's ends the frame shows the table.
		c := s.background(sx, sy, seed)
		// The cigar's shadow on the table.
		if math.Abs(v) < 7*R && math.Abs(u-R*0.3) < R*1.15 {
			c = c.scale(0.8)
		}
		return c
	}
	if math.Abs(u) < s.bandW/2 && math.Abs(v) < bandH/2 {
		c, m := design.sample(u/s.bandW+0.5, v/bandH+0.5)
		// Light falls off across the table; foil catches a broad sheen.
		g := float32(s.ambient + (1-s.ambient)*(0.8+0.2*math.Cos(u/s.bandW*2+s.lightDir)))
		sheen := float32(s.glare * math.Exp(-sq((u/s.bandW-s.lightDir*0.3)/0.18)))
		return rgbf{c[0]*g + 120*sheen*m, c[1]*g + 110*sheen*m, c[2]*g + 80*sheen*m}
	}
	c := s.background(sx, sy, seed)
	if math.Abs(u-shadowOff) < s.bandW/2 && math.Abs(v-shadowOff) < bandH/2 {
		c = c.scale(0.78)
	}
	return c
}

func sq(x float64) float64 { return x * x }

// segDist is the distance from p to the segment a-b, and where along it
// (0 at b, the tip, to 1 at a).
func segDist(px, py, ax, ay, bx, by float64) (float64, float64) {
	vx, vy := ax-bx, ay-by
	t := ((px-bx)*vx + (py-by)*vy) / (vx*vx + vy*vy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(px-(bx+t*vx), py-(by+t*vy)), t
}

// blur is a separable gaussian blur in place.
func blur(img *image.RGBA, sigma float64) {
	rad := int(math.Ceil(sigma * 2.5))
	k := make([]float64, 2*rad+1)
	var sum float64
	for i := range k {
		x := float64(i - rad)
		k[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	W, H := img.Rect.Dx(), img.Rect.Dy()
	tmp := make([]float64, 3*W*H)
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			var a [3]float64
			for i, kv := range k {
				xx := min(max(x+i-rad, 0), W-1)
				o := img.PixOffset(xx, y)
				a[0] += kv * float64(img.Pix[o])
				a[1] += kv * float64(img.Pix[o+1])
				a[2] += kv * float64(img.Pix[o+2])
			}
			copy(tmp[3*(y*W+x):], a[:])
		}
	}
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			var a [3]float64
			for i, kv := range k {
				yy := min(max(y+i-rad, 0), H-1)
				j := 3 * (yy*W + x)
				a[0] += kv * tmp[j]
				a[1] += kv * tmp[j+1]
				a[2] += kv * tmp[j+2]
			}
			o := img.PixOffset(x, y)
			img.Pix[o], img.Pix[o+1], img.Pix[o+2] = u8(float32(a[0])), u8(float32(a[1])), u8(float32(a[2]))
		}
	}
}
