package bandgen

import (
	"image"
	"math"
	"math/rand/v2"
	"strings"
	"unicode"
)

type groundKind int

const (
	groundPlain     groundKind = iota
	groundSplit                // a darker lower half under a foil rule
	groundPinstripe            // fine vertical stripes
	groundBands                // broad horizontal stripes
	groundLattice              // diagonal trellis
	groundSunburst             // rays from the centre
	nGround
)

type borderKind int

const (
	borderFoilRules  borderKind = iota // foil rules along the long edges
	borderBeads                        // a row of foil dots
	borderDentils                      // little blocks
	borderScallops                     // half discs hanging from the edges
	borderEdgeStrips                   // broad coloured strips, no foil
	nBorder
)

type medalKind int

const (
	medalRays    medalKind = iota // a foil starburst round a disc
	medalLozenge                  // a diamond framing a ring
	medalHexagon                  // a hexagonal cartouche
	medalCrowned                  // an oval under a crown
	medalLaurel                   // a disc in a wreath of leaves
	nMedal
)

type layoutKind int

const (
	// layoutStrip: medallion in the centre, brand on the wings, the line's
	// name on a strip along the bottom.
	layoutStrip layoutKind = iota
	// layoutEnds: medallions at both ends, brand over the line's name.
	layoutEnds
	// layoutPanels: three panels; brand in the middle, the line's name on
	// both side panels.
	layoutPanels
	// layoutBlock: a coloured block with the medallion on the left, the line's
	// name over the brand on the right.
	layoutBlock
	// layoutRibbon: brand across the top, a notched ribbon with the line's
	// name across the middle, small medallions at its ends.
	layoutRibbon
	nLayout
)

// palettes are grounds with their ink and foil: cream and oxblood, tobacco and
// gold, navy and silver... Chosen per brand.
var palettes = []struct{ ground, ground2, ink, foil, accent rgbf }{
	{hex(0xf1e6c8), hex(0xd8c79a), hex(0x6b1420), hex(0xc9a03c), hex(0x1d4d3a)},
	{hex(0x5a3418), hex(0x3d2210), hex(0xf3deb0), hex(0xd8b45a), hex(0x9c2a1c)},
	{hex(0x14233f), hex(0x0c1628), hex(0xe8e4da), hex(0xbfc4cc), hex(0xa8172b)},
	{hex(0xfaf7f0), hex(0xe6e0d2), hex(0x111111), hex(0xb8912e), hex(0x274f9c)},
	{hex(0x0f3b2c), hex(0x08251b), hex(0xf0e2b8), hex(0xcfa94a), hex(0x7d1b2e)},
	{hex(0x7b0f1a), hex(0x520a12), hex(0xfbe9c4), hex(0xe0bb55), hex(0x0f2c4f)},
	{hex(0x1b1b1d), hex(0x2c2c30), hex(0xe9c46a), hex(0xd4af37), hex(0xc0392b)},
	{hex(0xe9d8a6), hex(0xc9b27a), hex(0x2b2b6b), hex(0x9a7b2c), hex(0x8a2d3b)},
	{hex(0xd6e4ea), hex(0xaec6d1), hex(0x17324d), hex(0xa7adb5), hex(0xb5651d)},
	{hex(0xf3c9a0), hex(0xe0a46e), hex(0x3b1a0e), hex(0x8c6a1f), hex(0x2e5e4e)},
	{hex(0x4b2a5e), hex(0x321b40), hex(0xf5e6c4), hex(0xd8b45a), hex(0x2a7a6f)},
	{hex(0xb8d0b0), hex(0x8fae86), hex(0x243b1c), hex(0xb9972f), hex(0x6e1f1f)},
}

// accents are the colours a line may take for its own ribbon or panel.
var accents = []rgbf{hex(0x1d4d3a), hex(0x9c2a1c), hex(0x274f9c), hex(0x111111), hex(0x6b3fa0), hex(0xb5651d), hex(0x0f6f73), hex(0x7a7a7a)}

// design is everything a band shows: the brand's shared parts and the line's.
type design struct {
	aspect       float64
	pal          int
	ground       groundKind
	stripes      int // count or spacing factor of the ground's pattern
	border       borderKind
	medal        medalKind
	layout       layoutKind
	brandType    typeSpec
	lineType     typeSpec
	brand        string // as printed (maybe upper case)
	tagline      string // a small brand-wide legend ("HECHO A MANO", "1927")
	monogram     string
	blindEmboss  bool // the ground carries a blind-embossed pattern
	inkForeBrand bool // brand printed in ink (else foil)

	// The line's part.
	line      string
	lineColor rgbf // the line's ribbon / panel / strip
	stars     int  // small marks beside the line's name
}

var taglines = []string{"HECHO A MANO", "TOTALMENTE A MANO", "EST. 1927", "DESDE 1896", "PREMIUM CIGARS", "HAND MADE", "REPÚBLICA DOMINICANA", "NICARAGUA", "1948", "FÁBRICA DE TABACOS"}

func newBrandDesign(r *rand.Rand, brand string) design {
	d := design{
		aspect:       3.4 + 1.8*r.Float64(),
		pal:          r.IntN(len(palettes)),
		ground:       groundKind(r.IntN(int(nGround))),
		stripes:      3 + r.IntN(5),
		border:       borderKind(r.IntN(int(nBorder))),
		medal:        medalKind(r.IntN(int(nMedal))),
		layout:       layoutKind(r.IntN(int(nLayout))),
		brandType:    typeSpec{face: face(r.IntN(3)), variant: r.IntN(3), tracking: []float64{0, 0, 0.05, 0.12}[r.IntN(4)]},
		lineType:     typeSpec{face: face(r.IntN(3)), variant: r.IntN(3), tracking: []float64{0, 0.04, 0.1}[r.IntN(3)]},
		tagline:      taglines[r.IntN(len(taglines))],
		blindEmboss:  r.IntN(3) == 0,
		inkForeBrand: r.IntN(2) == 0,
	}
	d.brand = brand
	if d.brandType.face != script && r.IntN(2) == 0 {
		d.brand = strings.ToUpper(brand)
	}
	for _, w := range strings.Fields(brand) {
		if rs := []rune(w); len(rs) > 0 && unicode.IsUpper(rs[0]) && len(d.monogram) < 2 {
			d.monogram += string(rs[0])
		}
	}
	d.lineColor = palettes[d.pal].accent
	return d
}

// forLine is the brand's design for one of its lines: its name, and perhaps
// an accent colour or a few stars of its own.
func (d design) forLine(r *rand.Rand, name string, i int) design {
	d.line = name
	if d.lineType.face != script && r.IntN(2) == 0 {
		d.line = strings.ToUpper(name)
	}
	if i > 0 && r.IntN(2) == 0 {
		d.lineColor = accents[r.IntN(len(accents))]
	}
	if r.IntN(4) == 0 {
		d.stars = 1 + r.IntN(3)
	}
	return d
}

// Flat draws the line's band flat, width pixels wide (its height follows
// from the brand's aspect).
func (l Line) Flat(width int) *image.RGBA { return l.d.render(width).rgba() }

func (d design) render(width int) *surface {
	w := width
	h := max(8, int(math.Round(float64(width)/d.aspect)))
	s := newSurface(w, h)
	pal := palettes[d.pal]
	W, H := float64(w), float64(h)
	s.fill(s.pen().rect(0, 0, W, H).mask(), solid(pal.ground))
	// Paper grain, fixed by the brand's design (not random per render).
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			g := float32(3 * math.Sin(float64(x)*0.9+math.Sin(float64(y)*0.7)*2) * math.Cos(float64(y)*1.3))
			i := 3 * (y*w + x)
			s.rgb[i] += g
			s.rgb[i+1] += g
			s.rgb[i+2] += g
		}
	}
	d.drawGround(s, W, H)
	top, bottom := d.drawBorder(s, W, H)
	d.drawLayout(s, W, H, top, bottom)
	return s
}

func (d design) drawGround(s *surface, W, H float64) {
	pal := palettes[d.pal]
	pattern := solid(mix(pal.ground, pal.ground2, 0.8))
	if d.blindEmboss {
		pattern = emboss(0.35)
	}
	switch d.ground {
	case groundSplit:
		s.fill(s.pen().rect(0, H*0.55, W, H).mask(), solid(pal.ground2))
		s.fill(s.pen().rect(0, H*0.55-H*0.015, W, H*0.55+H*0.015).mask(), foil(pal.foil, int(H)))
	case groundPinstripe:
		p := s.pen()
		step := H / float64(2+d.stripes)
		for x := step / 2; x < W; x += step {
			p.rect(x, 0, x+math.Max(1, H*0.012), H)
		}
		s.fill(p.mask(), pattern)
	case groundBands:
		p := s.pen()
		n := d.stripes
		for i := 0; i < n; i += 2 {
			p.rect(0, H*float64(i)/float64(n), W, H*float64(i+1)/float64(n))
		}
		s.fill(p.mask(), pattern)
	case groundLattice:
		p := s.pen()
		step := H / float64(1+d.stripes/2)
		for x := -H; x < W+H; x += step {
			p.stroke([][2]float64{{x, 0}, {x + H, H}}, math.Max(1, H*0.02))
			p.stroke([][2]float64{{x + H, 0}, {x, H}}, math.Max(1, H*0.02))
		}
		s.fill(p.mask(), pattern)
	case groundSunburst:
		p := s.pen()
		cx, cy := W/2, H/2
		n := 8 + 4*d.stripes
		for i := 0; i < n; i += 2 {
			a0, a1 := 2*math.Pi*float64(i)/float64(n), 2*math.Pi*float64(i+1)/float64(n)
			p.poly([][2]float64{{cx, cy}, {cx + W*math.Cos(a0), cy + W*math.Sin(a0)}, {cx + W*math.Cos(a1), cy + W*math.Sin(a1)}})
		}
		s.fill(p.mask(), pattern)
	}
}

// drawBorder draws the long edges' border and answers the band's inner top
// and bottom.
func (d design) drawBorder(s *surface, W, H float64) (top, bottom float64) {
	pal := palettes[d.pal]
	switch d.border {
	case borderFoilRules:
		p := s.pen()
		t := H * 0.025
		p.rect(0, H*0.05, W, H*0.05+t).rect(0, H*0.95-t, W, H*0.95)
		p.rect(0, H*0.1, W, H*0.1+t/2).rect(0, H*0.9-t/2, W, H*0.9)
		s.fill(p.mask(), foil(pal.foil, int(H)))
		return H * 0.13, H * 0.87
	case borderBeads:
		p := s.pen()
		r := H * 0.03
		for x := r * 2; x < W; x += r * 3.2 {
			p.ellipse(x, H*0.07, r, r, 0).ellipse(x, H*0.93, r, r, 0)
		}
		s.fill(p.mask(), foil(pal.foil, int(H)))
		return H * 0.12, H * 0.88
	case borderDentils:
		p := s.pen()
		bw := H * 0.045
		for x := 0.0; x < W; x += bw * 2 {
			p.rect(x, H*0.03, x+bw, H*0.1).rect(x+bw, H*0.9, x+2*bw, H*0.97)
		}
		s.fill(p.mask(), solid(pal.ink))
		return H * 0.12, H * 0.88
	case borderScallops:
		p := s.pen()
		r := H * 0.06
		for x := r; x < W; x += 2 * r {
			p.ellipse(x, 0, r, r, 0).ellipse(x, H, r, r, 0)
		}
		s.fill(p.mask(), solid(pal.accent))
		s.fill(s.pen().rect(0, r, W, r+H*0.012).rect(0, H-r-H*0.012, W, H-r).mask(), foil(pal.foil, int(H)))
		return r + H*0.03, H - r - H*0.03
	default: // borderEdgeStrips
		s.fill(s.pen().rect(0, 0, W, H*0.1).rect(0, H*0.9, W, H).mask(), solid(pal.accent))
		return H * 0.12, H * 0.88
	}
}

// medallion draws the brand's medallion centred on (cx, cy), r tall (half).
func (d design) medallion(s *surface, cx, cy, r float64) {
	pal := palettes[d.pal]
	gilt := foil(pal.foil, int(r*2))
	inner := r * 0.72
	switch d.medal {
	case medalRays:
		s.fill(s.pen().regular(cx, cy, r, 16, r*0.78, 0).mask(), gilt)
		s.fill(s.pen().ellipse(cx, cy, inner, inner, 0).mask(), solid(pal.ink))
	case medalLozenge:
		s.fill(s.pen().regular(cx, cy, r, 4, 0, 0).mask(), solid(pal.accent))
		ring := minus(s.pen().ellipse(cx, cy, r*0.62, r*0.62, 0).mask(), s.pen().ellipse(cx, cy, r*0.52, r*0.52, 0).mask())
		s.fill(ring, gilt)
		inner = r * 0.5
	case medalHexagon:
		s.fill(s.pen().regular(cx, cy, r, 6, 0, math.Pi/6).mask(), gilt)
		s.fill(s.pen().regular(cx, cy, r*0.85, 6, 0, math.Pi/6).mask(), solid(pal.ground2))
		inner = r * 0.7
	case medalCrowned:
		s.fill(s.pen().ellipse(cx, cy+r*0.15, r*0.7, r*0.85, 0).mask(), gilt)
		s.fill(s.pen().ellipse(cx, cy+r*0.15, r*0.58, r*0.72, 0).mask(), solid(pal.accent))
		crown := [][2]float64{{cx - r*0.5, cy - r*0.55}, {cx - r*0.55, cy - r}, {cx - r*0.25, cy - r*0.75}, {cx, cy - r*1.05}, {cx + r*0.25, cy - r*0.75}, {cx + r*0.55, cy - r}, {cx + r*0.5, cy - r*0.55}}
		s.fill(s.pen().poly(crown).mask(), gilt)
		cy += r * 0.15
		inner = r * 0.55
	case medalLaurel:
		p := s.pen()
		for side := -1.0; side <= 1; side += 2 {
			for i := 0; i < 7; i++ {
				t := math.Pi/2 + side*(0.35+float64(i)*0.33)
				p.ellipse(cx+r*0.85*math.Cos(t), cy+r*0.85*math.Sin(t), r*0.2, r*0.08, t+math.Pi/2*side*0.6)
			}
		}
		s.fill(p.mask(), gilt)
		s.fill(s.pen().ellipse(cx, cy, r*0.62, r*0.62, 0).mask(), solid(pal.accent))
		inner = r * 0.55
	}
	s.fill(s.text(d.monogram, typeSpec{face: serif}, cx, cy, inner*1.5, inner*0.9), foil(pal.foil, int(r)))
}

// brandPaint is the brand's ink, or foil where the brand prints in foil.
func (d design) brandPaint(H float64) paint {
	pal := palettes[d.pal]
	if d.inkForeBrand {
		return solid(pal.ink)
	}
	return foil(pal.foil, int(H))
}

// lineName draws the line's name (and its stars) in the box, in col.
func (d design) lineName(s *surface, cx, cy, maxW, maxH float64, col rgbf) {
	if d.stars > 0 {
		sr := maxH * 0.28
		gap := sr * 2.6
		maxW -= gap * float64(d.stars) * 2
		p := s.pen()
		for i := 0; i < d.stars; i++ {
			off := maxW/2 + gap*(float64(i)+0.7)
			p.regular(cx-off, cy, sr, 5, sr*0.45, 0).regular(cx+off, cy, sr, 5, sr*0.45, 0)
		}
		s.fill(p.mask(), solid(col))
	}
	s.fill(s.text(d.line, d.lineType, cx, cy, maxW, maxH), solid(col))
}

// contrast picks whichever of the ground and the ink reads better on bg.
func contrast(bg rgbf, a, b rgbf) rgbf {
	if math.Abs(float64(bg.lum()-a.lum())) > math.Abs(float64(bg.lum()-b.lum())) {
		return a
	}
	return b
}

func (d design) drawLayout(s *surface, W, H, top, bottom float64) {
	pal := palettes[d.pal]
	ih := bottom - top
	mid := (top + bottom) / 2
	switch d.layout {
	case layoutStrip:
		sh := ih * 0.3
		s.fill(s.pen().rect(0, bottom-sh, W, bottom).mask(), solid(d.lineColor))
		d.lineName(s, W/2, bottom-sh/2, W*0.7, sh*0.62, contrast(d.lineColor, hex(0xf7f1e1), pal.ink))
		mr := (ih - sh) * 0.5
		d.medallion(s, W/2, top+mr, mr*0.95)
		wing := W/2 - mr*1.4
		s.fill(s.text(d.brand, d.brandType, wing/2+W*0.02, top+mr, wing*0.9, mr*1.1), d.brandPaint(H))
		s.fill(s.text(d.tagline, typeSpec{face: sans, variant: 2, tracking: 0.1}, W-wing/2-W*0.02, top+mr, wing*0.85, mr*0.5), solid(contrast(pal.ground, pal.ink, pal.foil)))
	case layoutEnds:
		mr := ih * 0.42
		d.medallion(s, mr*1.4, mid, mr)
		d.medallion(s, W-mr*1.4, mid, mr)
		inner := W - mr*5.6
		s.fill(s.text(d.brand, d.brandType, W/2, top+ih*0.33, inner, ih*0.5), d.brandPaint(H))
		s.fill(s.pen().rect(W/2-inner*0.3, top+ih*0.64, W/2+inner*0.3, top+ih*0.655).mask(), foil(pal.foil, int(H)))
		d.lineName(s, W/2, top+ih*0.8, inner*0.8, ih*0.24, contrast(pal.ground, pal.ink, d.lineColor))
	case layoutPanels:
		side := W * 0.2
		for _, x := range []float64{0, W - side} {
			s.fill(s.pen().rect(x, top, x+side, bottom).mask(), solid(d.lineColor))
			d.lineName(s, x+side/2, mid, side*0.85, ih*0.28, contrast(d.lineColor, hex(0xf7f1e1), pal.ink))
		}
		p := s.pen()
		for _, x := range []float64{side, W - side} {
			p.rect(x-H*0.03, top, x-H*0.015, bottom).rect(x+H*0.015, top, x+H*0.03, bottom)
		}
		s.fill(p.mask(), foil(pal.foil, int(H)))
		mr := ih * 0.22
		d.medallion(s, W/2, top+mr*1.1, mr)
		s.fill(s.text(d.brand, d.brandType, W/2, top+ih*0.7, W-2*side-W*0.06, ih*0.45), d.brandPaint(H))
	case layoutBlock:
		bw := W * 0.28
		s.fill(s.pen().rect(0, top, bw, bottom).mask(), solid(pal.accent))
		d.medallion(s, bw/2, mid, ih*0.44)
		rest := W - bw
		d.lineName(s, bw+rest/2, top+ih*0.22, rest*0.7, ih*0.26, contrast(pal.ground, d.lineColor, pal.ink))
		s.fill(s.text(d.brand, d.brandType, bw+rest/2, top+ih*0.64, rest*0.88, ih*0.5), d.brandPaint(H))
	default: // layoutRibbon
		s.fill(s.text(d.brand, d.brandType, W/2, top+ih*0.27, W*0.8, ih*0.45), d.brandPaint(H))
		ry0, ry1 := top+ih*0.56, top+ih*0.92
		n := (ry1 - ry0) / 2
		rib := [][2]float64{{W * 0.12, ry0}, {W * 0.88, ry0}, {W*0.88 + n, (ry0 + ry1) / 2}, {W * 0.88, ry1}, {W * 0.12, ry1}, {W*0.12 - n, (ry0 + ry1) / 2}}
		s.fill(s.pen().poly(rib).mask(), solid(d.lineColor))
		d.lineName(s, W/2, (ry0+ry1)/2, W*0.6, (ry1-ry0)*0.62, contrast(d.lineColor, hex(0xf7f1e1), pal.ink))
		mr := (ry1 - ry0) * 0.75
		d.medallion(s, W*0.06, (ry0+ry1)/2, mr)
		d.medallion(s, W*0.94, (ry0+ry1)/2, mr)
	}
}
