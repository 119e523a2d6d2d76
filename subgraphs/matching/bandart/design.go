// Package bandart draws synthetic cigar bands and turns them into synthetic
// photographs, for building and testing band recognition without real photos.
//
// A band's design is derived deterministically from its brand and line names
// (hash-seeded): each line has its own design, and the lines of one brand share
// the brand's palette and typeface, as real bands do. Render draws the flat
// band's front face (the half of the band a camera can see, flattened, 5:1);
// Photo wraps it round the front half of a cigar and photographs it badly (rotation, perspective, curvature, crop,
// blur, lighting, noise, JPEG, a cluttered background).
package bandart

import (
	"hash/fnv"
	"image/color"
	"math/rand/v2"
)

// MedallionShape is the shape of a band's medallion (crest).
type MedallionShape int

// Medallion shapes.
const (
	MedallionNone MedallionShape = iota
	MedallionCircle
	MedallionOval
	MedallionShield
)

// String names the shape (the names the fingerprint package uses too).
func (m MedallionShape) String() string {
	return [...]string{"none", "circle", "oval", "shield"}[m]
}

// MedallionPlace is where a medallion sits on the band.
type MedallionPlace int

// Medallion places.
const (
	PlaceCenter MedallionPlace = iota // centre; the names flank it
	PlaceLeft
	PlaceRight
	PlaceBothEnds
)

// BorderStyle is the band's border.
type BorderStyle int

// Border styles.
const (
	BorderNone BorderStyle = iota
	BorderSingle
	BorderDouble
)

// TextLayout is how the brand and line names are arranged.
type TextLayout int

// Text layouts.
const (
	TextBrandOverLine TextLayout = iota // brand large, line small below
	TextLineOverBrand                   // line small above, brand large below
	TextLineOnRibbon                    // brand large, line on a coloured ribbon below
	TextLineOnSides                     // brand large in the middle, line small on both side panels
)

// Ornament is a small repeated decoration.
type Ornament int

// Ornaments.
const (
	OrnamentNone Ornament = iota
	OrnamentDots
	OrnamentStars
	OrnamentDiamonds
)

// Pattern is a fine texture printed on the band's ground.
type Pattern int

// Patterns.
const (
	PatternPlain Pattern = iota
	PatternPinstripe
	PatternHatch
	PatternGradient
)

// Stripe is a horizontal stripe running the band's length.
type Stripe struct {
	// Y is the stripe's centre, 0 (top) .. 1 (bottom) of the band's height.
	Y float64
	// Height is the stripe's height as a fraction of the band's height.
	Height float64
	// Color is the stripe's colour.
	Color color.RGBA
}

// Design is everything Render needs to draw a band.
type Design struct {
	Brand, Line string

	// Brand level: shared by all lines of the brand.

	// Palette holds the brand's colours: ground, text, accent, dark.
	Palette [4]color.RGBA
	// Gilt is the brand's gold (foil) colour; HasGilt says whether it uses one.
	Gilt    color.RGBA
	HasGilt bool
	// Font is the index of the brand's typeface in Fonts.
	Font int
	// Upper draws the names in capitals.
	Upper bool
	// Tracking is extra letter spacing as a fraction of the font size.
	Tracking float64

	// Line level: the line's own design.

	Ground      color.RGBA // the band's ground colour (one of the palette)
	Ink         color.RGBA // the colour of the names
	Accent      color.RGBA // stripes, ribbon, side panels
	Pattern     Pattern
	Stripes     []Stripe
	SidePanels  float64 // width of coloured end panels as a fraction of the width (0: none)
	Medallion   MedallionShape
	Place       MedallionPlace
	MedalColor  color.RGBA
	Border      BorderStyle
	BorderColor color.RGBA
	Text        TextLayout
	Ornament    Ornament
}

func seeded(parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{r, g, b, 255} }

// Ground colours seen on real bands.
var grounds = []color.RGBA{
	rgb(245, 238, 220), // cream
	rgb(250, 250, 247), // white
	rgb(178, 28, 36),   // red
	rgb(20, 20, 22),    // black
	rgb(22, 38, 88),    // navy
	rgb(112, 22, 38),   // burgundy
	rgb(18, 78, 52),    // green
	rgb(196, 160, 72),  // gold
	rgb(96, 58, 30),    // brown
	rgb(34, 84, 168),   // royal blue
	rgb(226, 112, 30),  // orange
	rgb(236, 212, 150), // tan
	rgb(92, 36, 110),   // purple
	rgb(40, 120, 150),  // teal
}

var accents = []color.RGBA{
	rgb(200, 30, 40), rgb(20, 40, 110), rgb(18, 90, 50), rgb(212, 172, 60),
	rgb(240, 240, 235), rgb(15, 15, 15), rgb(120, 20, 40), rgb(230, 120, 30),
	rgb(60, 140, 200), rgb(150, 60, 140),
}

var darks = []color.RGBA{
	rgb(12, 12, 14), rgb(18, 28, 70), rgb(90, 18, 30), rgb(60, 36, 20), rgb(14, 56, 36),
}

var inks = []color.RGBA{
	rgb(15, 15, 15), rgb(250, 250, 250), rgb(200, 165, 70), rgb(170, 25, 30), rgb(20, 40, 110),
}

func luminance(c color.RGBA) float64 {
	return 0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)
}

func dist(a, b color.RGBA) float64 {
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return dr*dr + dg*dg + db*db
}

// pick returns the element of cs farthest (RGB) from all of avoid, choosing
// randomly among candidates that are far enough.
func pickFar(r *rand.Rand, cs []color.RGBA, min float64, avoid ...color.RGBA) color.RGBA {
	start := r.IntN(len(cs))
	best, bestD := cs[start], -1.0
	for i := range cs {
		c := cs[(start+i)%len(cs)]
		d := 1e18
		for _, a := range avoid {
			d = min2(d, dist(c, a))
		}
		if d >= min*min {
			return c
		}
		if d > bestD {
			best, bestD = c, d
		}
	}
	return best
}

func min2(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

func jitter(r *rand.Rand, c color.RGBA, n int) color.RGBA {
	j := func(v uint8) uint8 {
		x := int(v) + r.IntN(2*n+1) - n
		return uint8(max(0, min(255, x)))
	}
	return color.RGBA{j(c.R), j(c.G), j(c.B), 255}
}

// DesignFor returns the design of the band of a brand's line. It is
// deterministic: the same names always give the same design.
func DesignFor(brand, line string) Design {
	d := Design{Brand: brand, Line: line}

	// Brand: palette and typeface.
	br := seeded("brand", brand)
	ground := jitter(br, grounds[br.IntN(len(grounds))], 8)
	ink := pickFar(br, inks, 150, ground)
	accent := jitter(br, pickFar(br, accents, 120, ground, ink), 6)
	dark := pickFar(br, darks, 60, ground)
	d.Palette = [4]color.RGBA{ground, ink, accent, dark}
	d.HasGilt = br.Float64() < 0.6
	d.Gilt = jitter(br, rgb(212, 175, 55), 10)
	d.Font = br.IntN(len(fontFiles))
	d.Upper = br.Float64() < 0.7
	d.Tracking = []float64{0, 0.04, 0.1, 0.2}[br.IntN(4)]

	// Line: layout and colour roles.
	lr := seeded("line", brand, line)
	switch x := lr.Float64(); {
	case x < 0.5:
		d.Ground = ground
	case x < 0.75:
		d.Ground = accent
	default:
		d.Ground = dark
	}
	inkChoices := []color.RGBA{ink, ground, accent, dark}
	if d.HasGilt {
		inkChoices = append(inkChoices, d.Gilt)
	}
	d.Ink = pickContrast(lr, inkChoices, d.Ground)
	acc := []color.RGBA{accent, ground, dark, ink}
	if d.HasGilt {
		acc = append(acc, d.Gilt, d.Gilt)
	}
	d.Accent = pickFar(lr, acc, 90, d.Ground, d.Ink)
	d.Pattern = Pattern(lr.IntN(4))

	nStripes := lr.IntN(4) // pairs, symmetric about the middle
	y := 0.06 + lr.Float64()*0.04
	for i := 0; i < nStripes; i++ {
		h := 0.025 + lr.Float64()*0.06
		c := d.Accent
		if d.HasGilt && lr.Float64() < 0.4 {
			c = d.Gilt
		} else if lr.Float64() < 0.25 {
			c = d.Ink
		}
		d.Stripes = append(d.Stripes, Stripe{Y: y + h/2, Height: h, Color: c}, Stripe{Y: 1 - y - h/2, Height: h, Color: c})
		y += h + 0.02 + lr.Float64()*0.04
	}
	if lr.Float64() < 0.4 {
		d.SidePanels = 0.08 + lr.Float64()*0.14
	}
	d.Medallion = MedallionShape(lr.IntN(4))
	d.Place = MedallionPlace(lr.IntN(4))
	d.MedalColor = pickFar(lr, append([]color.RGBA{d.Gilt, accent, dark, ink}, acc...), 80, d.Ground)
	if !d.HasGilt && d.MedalColor == d.Gilt {
		d.MedalColor = d.Accent
	}
	d.Border = BorderStyle(lr.IntN(3))
	if d.HasGilt && lr.Float64() < 0.7 {
		d.BorderColor = d.Gilt
	} else {
		d.BorderColor = d.Ink
	}
	d.Text = TextLayout(lr.IntN(4))
	d.Ornament = Ornament(lr.IntN(4))
	return d
}

// pickContrast picks a colour with clearly different luminance from bg,
// randomly among those that qualify, else the one with the most.
func pickContrast(r *rand.Rand, cs []color.RGBA, bg color.RGBA) color.RGBA {
	start := r.IntN(len(cs))
	best, bestD := cs[start], -1.0
	for i := range cs {
		c := cs[(start+i)%len(cs)]
		d := luminance(c) - luminance(bg)
		if d < 0 {
			d = -d
		}
		if d >= 95 && dist(c, bg) >= 140*140 {
			return c
		}
		if d > bestD {
			best, bestD = c, d
		}
	}
	return best
}
