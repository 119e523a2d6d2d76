package bandart

import (
	"image"
	"image/color"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/gomediumitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/gofont/gosmallcaps"
	"golang.org/x/image/font/gofont/gosmallcapsitalic"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Aspect is the width:height ratio of a rendered band.
const Aspect = 5

// fontFiles are the typefaces a brand may use (Go's own fonts). Bold and
// display faces are listed twice: they are what bands use most.
var fontFiles = [][]byte{
	gobold.TTF, gobold.TTF, gobolditalic.TTF, goregular.TTF, goitalic.TTF,
	gomedium.TTF, gomediumitalic.TTF, gosmallcaps.TTF, gosmallcaps.TTF,
	gosmallcapsitalic.TTF, gomono.TTF, gomonobold.TTF,
}

var (
	fontsOnce sync.Once
	fonts     []*opentype.Font
)

func fontAt(i int) *opentype.Font {
	fontsOnce.Do(func() {
		for _, b := range fontFiles {
			f, err := opentype.Parse(b)
			if err != nil {
				panic("bandart: bundled font: " + err.Error())
			}
			fonts = append(fonts, f)
		}
	})
	return fonts[i%len(fonts)]
}

// canvas is a float RGB image we draw on at twice the output resolution.
type canvas struct {
	img  *image.RGBA
	w, h int
}

func (c *canvas) set(x, y int, col color.RGBA) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return
	}
	i := c.img.PixOffset(x, y)
	c.img.Pix[i], c.img.Pix[i+1], c.img.Pix[i+2], c.img.Pix[i+3] = col.R, col.G, col.B, 255
}

// fill paints every pixel of the box (in pixel units) whose centre is inside.
func (c *canvas) fill(x0, y0, x1, y1 float64, inside func(x, y float64) bool, col color.RGBA) {
	for y := max(0, int(y0)); y < min(c.h, int(math.Ceil(y1))); y++ {
		for x := max(0, int(x0)); x < min(c.w, int(math.Ceil(x1))); x++ {
			if inside(float64(x)+0.5, float64(y)+0.5) {
				c.set(x, y, col)
			}
		}
	}
}

func (c *canvas) rect(x0, y0, x1, y1 float64, col color.RGBA) {
	c.fill(x0, y0, x1, y1, func(x, y float64) bool { return x >= x0 && x < x1 && y >= y0 && y < y1 }, col)
}

func (c *canvas) ellipse(cx, cy, rx, ry float64, col color.RGBA) {
	c.fill(cx-rx, cy-ry, cx+rx, cy+ry, func(x, y float64) bool {
		dx, dy := (x-cx)/rx, (y-cy)/ry
		return dx*dx+dy*dy <= 1
	}, col)
}

// shield is a heraldic shield: flat top, straight sides, a curved point.
func (c *canvas) shield(cx, cy, rx, ry float64, col color.RGBA) {
	c.fill(cx-rx, cy-ry, cx+rx, cy+ry, func(x, y float64) bool {
		dx, dy := (x-cx)/rx, (y-cy)/ry // dy in -1..1
		if dy < -1 || math.Abs(dx) > 1 {
			return false
		}
		if dy <= 0.1 {
			return true
		}
		t := (dy - 0.1) / 0.9 // 0..1 down to the point
		return math.Abs(dx) <= math.Sqrt(math.Max(0, 1-t*t))
	}, col)
}

func (c *canvas) diamond(cx, cy, rx, ry float64, col color.RGBA) {
	c.fill(cx-rx, cy-ry, cx+rx, cy+ry, func(x, y float64) bool {
		return math.Abs(x-cx)/rx+math.Abs(y-cy)/ry <= 1
	}, col)
}

func (c *canvas) star(cx, cy, r float64, col color.RGBA) {
	var px, py [10]float64
	for i := range 10 {
		a := -math.Pi/2 + float64(i)*math.Pi/5
		rr := r
		if i%2 == 1 {
			rr = r * 0.42
		}
		px[i], py[i] = cx+rr*math.Cos(a), cy+rr*math.Sin(a)
	}
	c.fill(cx-r, cy-r, cx+r, cy+r, func(x, y float64) bool {
		in := false
		for i, j := 0, 9; i < 10; j, i = i, i+1 {
			if (py[i] > y) != (py[j] > y) && x < (px[j]-px[i])*(y-py[i])/(py[j]-py[i])+px[i] {
				in = !in
			}
		}
		return in
	}, col)
}

// text draws s centred on (cx, cy) in at most maxW pixels, starting at size
// px and shrinking to fit.
func (c *canvas) text(d *Design, s string, size, cx, cy, maxW float64, col color.RGBA) {
	if d.Upper {
		s = strings.ToUpper(s)
	}
	if s == "" || size < 4 {
		return
	}
	f := fontAt(d.Font)
	for size >= 4 {
		face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
		if err != nil {
			return
		}
		track := fixed.Int26_6(d.Tracking * size * 64)
		var w fixed.Int26_6
		for _, r := range s {
			a, _ := face.GlyphAdvance(r)
			w += a + track
		}
		w -= track
		if float64(w)/64 > maxW && size > 4 {
			face.Close()
			size *= 0.92
			continue
		}
		capH := size * 0.7
		dr := &font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: face,
			Dot: fixed.Point26_6{X: fixed.Int26_6((cx - float64(w)/128) * 64), Y: fixed.Int26_6((cy + capH/2) * 64)}}
		var buf [4]byte
		for _, r := range s {
			n := utf8.EncodeRune(buf[:], r)
			dr.DrawBytes(buf[:n])
			dr.Dot.X += track
		}
		face.Close()
		return
	}
}

// Render draws the band of design d, width pixels wide and width/Aspect high.
func Render(d Design, width int) *image.RGBA {
	width = max(width, 2*Aspect)
	const ss = 2 // supersampling
	W, H := float64(width*ss), float64(width*ss/Aspect)
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, int(W), int(H))), w: int(W), h: int(H)}

	// Ground and its pattern.
	c.rect(0, 0, W, H, d.Ground)
	shade := func(k float64) color.RGBA {
		f := func(v uint8) uint8 { return uint8(max(0, min(255, float64(v)*k))) }
		return color.RGBA{f(d.Ground.R), f(d.Ground.G), f(d.Ground.B), 255}
	}
	if luminance(d.Ground) > 200 {
		shade = func(k float64) color.RGBA {
			f := func(v uint8) uint8 { return uint8(max(0, min(255, float64(v)*(2-k)-40*(k-1)))) }
			return color.RGBA{f(d.Ground.R), f(d.Ground.G), f(d.Ground.B), 255}
		}
	}
	switch d.Pattern {
	case PatternPinstripe:
		step := H / 14
		for x := 0.0; x < W; x += step {
			c.rect(x, 0, x+step*0.18, H, shade(0.86))
		}
	case PatternHatch:
		step := H / 10
		c.fill(0, 0, W, H, func(x, y float64) bool { return math.Mod(x+y, step) < step*0.2 }, shade(0.9))
	case PatternGradient:
		for y := 0; y < c.h; y++ {
			k := 0.8 + 0.35*math.Sin(math.Pi*float64(y)/H)
			c.rect(0, float64(y), W, float64(y+1), shade(k))
		}
	}

	// Side panels.
	if d.SidePanels > 0 {
		pw := d.SidePanels * W
		c.rect(0, 0, pw, H, d.Accent)
		c.rect(W-pw, 0, W, H, d.Accent)
	}
	// Stripes.
	zoneTop, zoneBot := 0.08*H, 0.92*H
	for _, s := range d.Stripes {
		y0, y1 := (s.Y-s.Height/2)*H, (s.Y+s.Height/2)*H
		c.rect(0, y0, W, y1, s.Color)
		if s.Y < 0.5 {
			zoneTop = max(zoneTop, y1+0.02*H)
		} else {
			zoneBot = min(zoneBot, y0-0.02*H)
		}
	}
	// Border.
	if d.Border != BorderNone {
		t := 0.025 * H
		frame := func(in float64) {
			c.rect(in, in, W-in, in+t, d.BorderColor)
			c.rect(in, H-in-t, W-in, H-in, d.BorderColor)
			c.rect(in, in, in+t, H-in, d.BorderColor)
			c.rect(W-in-t, in, W-in, H-in, d.BorderColor)
		}
		frame(0.04 * H)
		if d.Border == BorderDouble {
			frame(0.04*H + 2.2*t)
		}
		zoneTop = max(zoneTop, 0.12*H)
		zoneBot = min(zoneBot, 0.88*H)
	}
	zh := zoneBot - zoneTop
	if zh < 0.45*H { // stripes ate the zone: keep the names legible
		zoneTop, zoneBot, zh = 0.26*H, 0.74*H, 0.48*H
	}

	// Medallions.
	medR := 0.34 * H
	left, right := d.SidePanels*W+0.03*W, W-d.SidePanels*W-0.03*W
	medal := func(cx float64) {
		cy := H / 2
		rx, ry := medR, medR
		switch d.Medallion {
		case MedallionCircle:
			c.ellipse(cx, cy, rx, ry, d.MedalColor)
			c.ellipse(cx, cy, rx*0.8, ry*0.8, d.Ground)
			c.ellipse(cx, cy, rx*0.68, ry*0.68, d.MedalColor)
		case MedallionOval:
			rx *= 1.45
			c.ellipse(cx, cy, rx, ry, d.MedalColor)
			c.ellipse(cx, cy, rx*0.85, ry*0.8, d.Ground)
			c.ellipse(cx, cy, rx*0.75, ry*0.66, d.MedalColor)
		case MedallionShield:
			ry *= 1.15
			c.shield(cx, cy, rx, ry, d.MedalColor)
			c.shield(cx, cy-0.04*ry, rx*0.78, ry*0.8, d.Ground)
			c.shield(cx, cy-0.06*ry, rx*0.66, ry*0.66, d.MedalColor)
		default:
			return
		}
		initial := []rune(d.Brand)[:1]
		c.text(&d, string(initial), ry*1.0, cx, cy-0.04*ry, rx*1.2, farthest(d.MedalColor, d.Ink, d.Ground, d.Gilt))
	}
	textL, textR := left, right
	split := false
	if d.Medallion != MedallionNone {
		mw := medR * 1.6
		if d.Medallion == MedallionOval {
			mw *= 1.45
		}
		switch d.Place {
		case PlaceCenter:
			medal(W / 2)
			split = true
		case PlaceLeft:
			medal(left + mw/2)
			textL = left + mw + 0.02*W
		case PlaceRight:
			medal(right - mw/2)
			textR = right - mw - 0.02*W
		case PlaceBothEnds:
			medal(left + mw/2)
			medal(right - mw/2)
			textL, textR = left+mw+0.02*W, right-mw-0.02*W
		}
	}

	// Ornaments along the zone's edges.
	if d.Ornament != OrnamentNone {
		orn := d.Accent
		if d.HasGilt {
			orn = d.Gilt
		}
		if dist(orn, d.Ground) < 60*60 {
			orn = d.Ink
		}
		n := 7
		for i := range n {
			x := textL + (textR-textL)*(float64(i)+0.5)/float64(n)
			for _, y := range []float64{zoneTop + 0.04*H, zoneBot - 0.04*H} {
				switch d.Ornament {
				case OrnamentDots:
					c.ellipse(x, y, 0.025*H, 0.025*H, orn)
				case OrnamentStars:
					c.star(x, y, 0.045*H, orn)
				case OrnamentDiamonds:
					c.diamond(x, y, 0.05*H, 0.03*H, orn)
				}
			}
		}
		zoneTop += 0.08 * H
		zoneBot -= 0.08 * H
		zh = zoneBot - zoneTop
	}

	// Names.
	brandSize, lineSize := zh*0.62, zh*0.34
	switch {
	case split:
		mw := medR * 1.1
		if d.Medallion == MedallionOval {
			mw *= 1.45
		}
		lw := W/2 - mw - textL
		c.text(&d, d.Brand, zh*0.6, textL+lw/2, H/2, lw*0.95, d.Ink)
		c.text(&d, d.Line, zh*0.45, W-textL-lw/2, H/2, lw*0.95, d.Ink)
	case d.Text == TextBrandOverLine:
		cx, w := (textL+textR)/2, (textR-textL)*0.95
		c.text(&d, d.Brand, brandSize, cx, zoneTop+zh*0.36, w, d.Ink)
		c.text(&d, d.Line, lineSize, cx, zoneTop+zh*0.82, w*0.8, d.Ink)
	case d.Text == TextLineOverBrand:
		cx, w := (textL+textR)/2, (textR-textL)*0.95
		c.text(&d, d.Line, lineSize, cx, zoneTop+zh*0.18, w*0.8, d.Ink)
		c.text(&d, d.Brand, brandSize, cx, zoneTop+zh*0.64, w, d.Ink)
	case d.Text == TextLineOnRibbon:
		cx, w := (textL+textR)/2, (textR-textL)*0.95
		c.text(&d, d.Brand, brandSize*0.95, cx, zoneTop+zh*0.33, w, d.Ink)
		rib := d.Accent
		if dist(rib, d.Ground) < 60*60 {
			rib = d.Ink
		}
		rw := w * 0.7
		c.rect(cx-rw/2, zoneTop+zh*0.64, cx+rw/2, zoneTop+zh*1.0, rib)
		c.text(&d, d.Line, lineSize*0.95, cx, zoneTop+zh*0.82, rw*0.92, farthest(rib, d.Ground, d.Ink))
	default: // TextLineOnSides
		sw := 0.17 * W
		cx := (textL + textR) / 2
		c.text(&d, d.Brand, zh*0.7, cx, H/2, min(textR-textL, W-2*sw-2*d.SidePanels*W)*0.9, d.Ink)
		lc := d.Ink
		if d.SidePanels > 0 {
			lc = farthest(d.Accent, d.Ink, d.Ground)
		}
		c.text(&d, d.Line, zh*0.3, d.SidePanels*W/2+sw*0.0+0.07*W, H/2, 0.12*W, lc)
		c.text(&d, d.Line, zh*0.3, W-d.SidePanels*W/2-0.07*W, H/2, 0.12*W, lc)
	}
	return downsample2(c.img)
}

// farthest returns the candidate farthest (RGB) from bg.
func farthest(bg color.RGBA, cands ...color.RGBA) color.RGBA {
	best, bd := cands[0], -1.0
	for _, c := range cands {
		if d := dist(c, bg); d > bd {
			best, bd = c, d
		}
	}
	return best
}

func downsample2(src *image.RGBA) *image.RGBA {
	w, h := src.Rect.Dx()/2, src.Rect.Dy()/2
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			i := src.PixOffset(2*x, 2*y)
			j := i + src.Stride
			o := dst.PixOffset(x, y)
			for k := range 4 {
				s := int(src.Pix[i+k]) + int(src.Pix[i+4+k]) + int(src.Pix[j+k]) + int(src.Pix[j+4+k])
				dst.Pix[o+k] = uint8((s + 2) / 4)
			}
		}
	}
	return dst
}
