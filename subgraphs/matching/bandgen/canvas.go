package bandgen

import (
	"image"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gosmallcaps"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// surface is a float RGB picture with a metal mask (how much of each pixel
// is gilt or silver foil: photos make it glint).
type surface struct {
	w, h  int
	rgb   []float32 // 0..255, 3 a pixel
	metal []float32 // 0..1
}

func newSurface(w, h int) *surface {
	return &surface{w: w, h: h, rgb: make([]float32, 3*w*h), metal: make([]float32, w*h)}
}

type rgbf [3]float32

func hex(v uint32) rgbf { return rgbf{float32(v >> 16 & 255), float32(v >> 8 & 255), float32(v & 255)} }

func (c rgbf) scale(k float32) rgbf { return rgbf{c[0] * k, c[1] * k, c[2] * k} }

func mix(a, b rgbf, t float32) rgbf {
	return rgbf{a[0] + (b[0]-a[0])*t, a[1] + (b[1]-a[1])*t, a[2] + (b[2]-a[2])*t}
}

func (c rgbf) lum() float32 { return 0.3*c[0] + 0.59*c[1] + 0.11*c[2] }

// paint is how a mask is filled: a colour at each pixel and how metallic it is.
type paint struct {
	at    func(x, y int) rgbf
	metal float32
	// relief > 0 embosses the mask's edges (lit from the top left).
	relief float32
}

func solid(c rgbf) paint { return paint{at: func(int, int) rgbf { return c }} }

// foil is gilt or silver leaf: a colour modulated by a slow diagonal sheen,
// stamped with a slight relief.
func foil(c rgbf, h int) paint {
	return paint{at: func(x, y int) rgbf {
		s := float32(0.82 + 0.3*math.Sin(float64(x+2*y)/float64(h)*1.7) + 0.1*math.Cos(float64(y)/float64(h)*6))
		return c.scale(s)
	}, metal: 1, relief: 0.25}
}

// emboss raises the mask blind (no ink): only its relief shows.
func emboss(strength float32) paint { return paint{relief: strength} }

// fill composites p through m (coverage 0..255).
func (s *surface) fill(m *image.Alpha, p paint) {
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			a := float32(m.Pix[y*m.Stride+x]) / 255
			if a == 0 && p.relief == 0 {
				continue
			}
			i := y*s.w + x
			px := rgbf{s.rgb[3*i], s.rgb[3*i+1], s.rgb[3*i+2]}
			if p.at != nil && a > 0 {
				px = mix(px, p.at(x, y), a)
				s.metal[i] += (p.metal - s.metal[i]) * a
			}
			if p.relief != 0 {
				// The slope of the mask towards the light.
				g := float32(alphaAt(m, x-1, y-1)) - float32(alphaAt(m, x+1, y+1))
				k := 1 + p.relief*g/255
				px = px.scale(k)
			}
			s.rgb[3*i], s.rgb[3*i+1], s.rgb[3*i+2] = px[0], px[1], px[2]
		}
	}
}

func alphaAt(m *image.Alpha, x, y int) uint8 {
	if x < 0 || y < 0 || x >= m.Rect.Dx() || y >= m.Rect.Dy() {
		return 0
	}
	return m.Pix[y*m.Stride+x]
}

func (s *surface) rgba() *image.RGBA {
	out := image.NewRGBA(image.Rect(0, 0, s.w, s.h))
	for i := 0; i < s.w*s.h; i++ {
		out.Pix[4*i], out.Pix[4*i+1], out.Pix[4*i+2], out.Pix[4*i+3] = u8(s.rgb[3*i]), u8(s.rgb[3*i+1]), u8(s.rgb[3*i+2]), 255
	}
	return out
}

func u8(v float32) uint8 {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v + 0.5)
}

// Shapes are anti-aliased masks drawn with x/image/vector.

type pen struct {
	z    *vector.Rasterizer
	w, h int
}

func (s *surface) pen() *pen { return &pen{z: vector.NewRasterizer(s.w, s.h), w: s.w, h: s.h} }

func (p *pen) poly(pts [][2]float64) *pen {
	p.z.MoveTo(float32(pts[0][0]), float32(pts[0][1]))
	for _, q := range pts[1:] {
		p.z.LineTo(float32(q[0]), float32(q[1]))
	}
	p.z.ClosePath()
	return p
}

func (p *pen) rect(x0, y0, x1, y1 float64) *pen {
	return p.poly([][2]float64{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}})
}

// ellipse, as a polygon of 72 sides (rotation rot, radians).
func (p *pen) ellipse(cx, cy, rx, ry, rot float64) *pen {
	pts := make([][2]float64, 72)
	for i := range pts {
		t := 2 * math.Pi * float64(i) / 72
		x, y := rx*math.Cos(t), ry*math.Sin(t)
		pts[i] = [2]float64{cx + x*math.Cos(rot) - y*math.Sin(rot), cy + x*math.Sin(rot) + y*math.Cos(rot)}
	}
	return p.poly(pts)
}

// regular draws an n-gon, or an n-pointed star when inner > 0.
func (p *pen) regular(cx, cy, r float64, n int, inner, rot float64) *pen {
	var pts [][2]float64
	for i := 0; i < n; i++ {
		t := rot + 2*math.Pi*float64(i)/float64(n)
		pts = append(pts, [2]float64{cx + r*math.Sin(t), cy - r*math.Cos(t)})
		if inner > 0 {
			t2 := t + math.Pi/float64(n)
			pts = append(pts, [2]float64{cx + inner*math.Sin(t2), cy - inner*math.Cos(t2)})
		}
	}
	return p.poly(pts)
}

// stroke draws a thick polyline (butt ends) as quads.
func (p *pen) stroke(pts [][2]float64, width float64) *pen {
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		dx, dy := b[0]-a[0], b[1]-a[1]
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		nx, ny := -dy/l*width/2, dx/l*width/2
		p.poly([][2]float64{{a[0] + nx, a[1] + ny}, {b[0] + nx, b[1] + ny}, {b[0] - nx, b[1] - ny}, {a[0] - nx, a[1] - ny}})
	}
	return p
}

func (p *pen) mask() *image.Alpha {
	m := image.NewAlpha(image.Rect(0, 0, p.w, p.h))
	p.z.Draw(m, m.Bounds(), image.Opaque, image.Point{})
	return m
}

// minus removes b from a (a ring is a disc minus a smaller one).
func minus(a, b *image.Alpha) *image.Alpha {
	for i := range a.Pix {
		a.Pix[i] = uint8(max(0, int(a.Pix[i])-int(b.Pix[i])))
	}
	return a
}

// Type.

// face is a typeface family: serif (Go Mono's slab serifs), sans, or script
// (an italic sheared further, with a flourish under the word).
type face int

const (
	serif face = iota
	sans
	script
)

var (
	fontOnce sync.Once
	fontsBy  map[face][]*opentype.Font
)

func fontsOf(f face) []*opentype.Font {
	fontOnce.Do(func() {
		parse := func(bs ...[]byte) []*opentype.Font {
			var out []*opentype.Font
			for _, b := range bs {
				ft, err := opentype.Parse(b)
				if err != nil {
					panic("bandgen: bundled font: " + err.Error())
				}
				out = append(out, ft)
			}
			return out
		}
		fontsBy = map[face][]*opentype.Font{
			serif:  parse(gomonobold.TTF, gomono.TTF),
			sans:   parse(gobold.TTF, gomedium.TTF, gosmallcaps.TTF),
			script: parse(gobolditalic.TTF, goitalic.TTF),
		}
	})
	return fontsBy[f]
}

// typeSpec is a typeface choice: family, which font of it, and tracking
// (extra space between letters, in ems).
type typeSpec struct {
	face     face
	variant  int
	tracking float64
}

// text draws s into a mask, as large as fits the box centred on (cx, cy),
// at most maxW wide and maxH tall.
func (s *surface) text(str string, ts typeSpec, cx, cy, maxW, maxH float64) *image.Alpha {
	fs := fontsOf(ts.face)
	ft := fs[ts.variant%len(fs)]
	const probe = 100.0
	width := func(size float64) float64 {
		fc, _ := opentype.NewFace(ft, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
		defer fc.Close()
		var w fixed.Int26_6
		n := 0
		for _, r := range str {
			adv, _ := fc.GlyphAdvance(r)
			w += adv
			n++
		}
		return float64(w)/64 + ts.tracking*size*float64(max(0, n-1))
	}
	size := min(maxH/0.72, probe*maxW/math.Max(1, width(probe)))
	if ts.face == script {
		size = min(maxH/0.9, probe*maxW/math.Max(1, width(probe)+0.25*probe*0.72))
	}
	if size < 3 {
		size = 3
	}
	fc, _ := opentype.NewFace(ft, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	defer fc.Close()
	m := image.NewAlpha(image.Rect(0, 0, s.w, s.h))
	tw := width(size)
	capH := 0.72 * size
	x := cx - tw/2
	base := cy + capH/2
	d := font.Drawer{Dst: m, Src: image.Opaque, Face: fc}
	for _, r := range str {
		d.Dot = fixed.Point26_6{X: fixed.Int26_6(x * 64), Y: fixed.Int26_6(base * 64)}
		d.DrawString(string(r))
		adv, _ := fc.GlyphAdvance(r)
		x += float64(adv)/64 + ts.tracking*size
	}
	if ts.face == script {
		m = shear(m, 0.22, base)
		// A swash under the word, thinning to its ends.
		p := s.pen()
		var pts [][2]float64
		for i := 0; i <= 24; i++ {
			t := float64(i) / 24
			pts = append(pts, [2]float64{cx - tw*0.55 + t*tw*1.05, base + size*0.12 + math.Sin(t*math.Pi*1.5)*size*0.06})
		}
		for i := 1; i < len(pts); i++ {
			w := size * 0.06 * math.Sin(float64(i)/float64(len(pts))*math.Pi)
			p.stroke(pts[i-1:i+1], math.Max(0.6, w))
		}
		sw := p.mask()
		for i := range m.Pix {
			m.Pix[i] = max(m.Pix[i], sw.Pix[i])
		}
	}
	return m
}

// shear slants a mask rightwards above the baseline (k pixels a pixel).
func shear(m *image.Alpha, k, base float64) *image.Alpha {
	out := image.NewAlpha(m.Rect)
	w, h := m.Rect.Dx(), m.Rect.Dy()
	for y := 0; y < h; y++ {
		off := k * (base - float64(y))
		for x := 0; x < w; x++ {
			sx := float64(x) - off
			x0 := int(math.Floor(sx))
			f := sx - float64(x0)
			v := (1-f)*float64(alphaAt(m, x0, y)) + f*float64(alphaAt(m, x0+1, y))
			out.Pix[y*out.Stride+x] = uint8(v + 0.5)
		}
	}
	return out
}
