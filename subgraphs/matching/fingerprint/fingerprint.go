// Package fingerprint describes the cigar band in a photo as a versioned JSON
// document (a Fingerprint), and compares two of them.
//
// Compute finds the band (an oriented rectangle; a band wraps a cigar, so it
// is unrolled assuming it spans the cigar's visible width), rectifies it to a
// normalised 256x64 image, evens out the light along it, and measures it: dominant colours in CIELAB with
// roles, stripes, medallion and borders, text lines and OCR text, perceptual
// hashes, and a fixed-length vector for nearest-neighbour indexes.
//
// Compare and Similarity score a query fingerprint (a user's photo) against an
// evidence fingerprint (e.g. from a clean rendering or a scan of a known band,
// computed with Options.Flat or Options.DetectFlat and carrying a Label).
//
// The JSON is deterministic: the same image and options give byte-identical
// JSON (single-threaded, no map iteration, floats rounded).
//
// # Format (version "vitola-band-3")
//
//	version     "vitola-band-3"
//	band        where: box [x0,y0,x1,y1] and corners (0..1 of the image),
//	            angle (degrees, clockwise), confidence (0..1; below
//	            ConfidentBand the band was not found), flat
//	colors      up to 5 CIELAB colours {role, l, a, b, share}, largest first;
//	            roles ground, text, gilt, accent
//	layout      stripes [{y, height, l, a, b}], medallion {present, x, width,
//	            shape}, border none|single|double, end_panels
//	typography  ocr ok|empty|unavailable|error, text, lines [{y, height, x0,
//	            x1}], stroke_density, char_height, glyphs
//	hashes      dhash, phash (64-bit, 16 hex digits; of the band white-
//	            balanced by grey world), color_layout (16x4 cells of Lab,
//	            384 hex digits; as seen)
//	vector      VectorLen floats, L2-normalised (cosine = dot product); of
//	            the band white-balanced by grey world
//	keypoints   up to KeypointsMax (evidence: EvidenceKeypoints) local
//	            features of the whole image, one base64 string of packed
//	            records (keypoints.go)
//	label       {brand, line} on evidence only
//	seal        empty from Compute; the platform's seal over the rest
//
// Band coordinates in layout and typography are of the normalised band: x
// 0..1 along it (the visible half of the band, unrolled), y 0..1 down.
//
// "vitola-band-2" is this format without keypoints: such fingerprints are
// still read and compared (Readable), on everything but keypoints.
//
// # Recognition
//
// Evidence: one fingerprint per line (all vitolas of a line wear the same
// band), from a clean photo or a flat scan of the band (NewEvidence). Index
// the Vector and the Keypoints for a shortlist, re-rank it with Compare and
// MatchKeypoints (see package recognize). Several photos of one band:
// average the scores (CompareMany).
package fingerprint

import (
	"context"
	"errors"
	"image"
	"math"
)

// Version is the format version written in every fingerprint.
const Version = "vitola-band-3"

// PreviousVersion is the format before keypoints: its fingerprints are read
// and compared on everything else.
const PreviousVersion = "vitola-band-2"

// Readable says whether fingerprints of format version v can be compared
// with this one's.
func Readable(v string) bool { return v == Version || v == PreviousVersion }

// workSide is the longer side of the working image the band is found in.
const workSide = 400

// Size of the normalised band image all measures are taken on.
const (
	NormWidth  = 256
	NormHeight = 64
)

// thetaC is how far round the cigar (either side of the front) the unrolled
// band reaches: the last 10° before the silhouette are too foreshortened.
const thetaC = 80 * math.Pi / 180

// Fingerprint describes one band in one image. Every float is rounded (3
// decimals, vector 4) so the JSON is short and stable.
type Fingerprint struct {
	// Version is the format version, "vitola-band-3".
	Version string `json:"version"`
	// Band is where the band is in the image.
	Band Band `json:"band"`
	// Colors are the band's dominant colours, largest share first.
	Colors []Color `json:"colors"`
	// Layout is the band's stripes, medallion, borders and end panels.
	Layout Layout `json:"layout"`
	// Typography is the band's text: OCR text and glyph/line measures.
	Typography Typography `json:"typography"`
	// Hashes are perceptual hashes of the normalised band.
	Hashes Hashes `json:"hashes"`
	// Vector is a fixed-length (VectorLen), L2-normalised description for
	// nearest-neighbour indexes; cosine (dot product) compares two.
	Vector []float32 `json:"vector"`
	// Keypoints are the image's local features (keypoints.go): corners at
	// several scales with their descriptors, packed. Fingerprints of
	// "vitola-band-2" have none.
	Keypoints *Keypoints `json:"keypoints,omitempty"`
	// Label names the band when it is known (evidence); Compute leaves it nil.
	Label *Label `json:"label,omitempty"`
	// Seal is an integrity seal over the rest, added by the platform; Compute
	// leaves it empty.
	Seal string `json:"seal,omitempty"`
}

// Band locates the band in the image. Coordinates are normalised: x by the
// image's width, y by its height, origin top-left.
type Band struct {
	// Box is the axis-aligned bounding box of Corners: [x0, y0, x1, y1].
	Box [4]float64 `json:"box"`
	// Corners are the band's corners: top-left, top-right, bottom-right,
	// bottom-left, as seen upright.
	Corners [4][2]float64 `json:"corners"`
	// Angle is the band's long axis in degrees, clockwise from horizontal
	// (image y points down), in [-50, 50].
	Angle float64 `json:"angle"`
	// Confidence is how sure the locator is, 0..1; for a flat band, how
	// much the image looks like a printed band. Below ConfidentBand the
	// band was not found.
	Confidence float64 `json:"confidence"`
	// Flat says the image was taken to be a flat band (Options.Flat, or
	// detected with Options.DetectFlat): the whole image, not unrolled.
	Flat bool `json:"flat,omitempty"`
}

// Color is a dominant colour.
type Color struct {
	// Role is "ground" (the band's background), "text" (the colour most
	// different from the ground), "gilt" (a gold), or "accent".
	Role string `json:"role"`
	// L, A, B are CIELAB (D65) coordinates.
	L float64 `json:"l"`
	A float64 `json:"a"`
	B float64 `json:"b"`
	// Share is the fraction of the band's area, 0..1.
	Share float64 `json:"share"`
}

// Layout is the band's geometry, in normalised band coordinates (x 0..1
// along the band, y 0..1 top to bottom).
type Layout struct {
	// Stripes are bands of colour running the band's length.
	Stripes []Stripe `json:"stripes"`
	// Medallion is the band's crest, if found.
	Medallion Medallion `json:"medallion"`
	// Border is "none", "single" or "double": thin lines along the top and
	// bottom edges.
	Border string `json:"border"`
	// EndPanels is the width of solid non-ground panels at the ends, 0..0.5.
	EndPanels float64 `json:"end_panels"`
}

// Stripe is a full-length stripe.
type Stripe struct {
	Y      float64 `json:"y"`      // centre
	Height float64 `json:"height"` // as a fraction of the band's height
	L      float64 `json:"l"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
}

// Medallion is a compact non-ground blob spanning most of the band's height.
type Medallion struct {
	Present bool `json:"present"`
	// X is its centre along the band (0..1); Width its width (fraction).
	X     float64 `json:"x"`
	Width float64 `json:"width"`
	// Shape is "round" or "shield" (narrower at the bottom), "" if absent.
	Shape string `json:"shape,omitempty"`
}

// Typography describes the band's lettering.
type Typography struct {
	// OCR is "ok" (text read), "empty" (OCR ran, read nothing), "unavailable"
	// (no OCR configured or installed) or "error".
	OCR string `json:"ocr"`
	// Text is what OCR read, whitespace-collapsed; empty without OCR.
	Text string `json:"text"`
	// Lines are the text lines found in the text colour, top first.
	Lines []TextLine `json:"lines"`
	// StrokeDensity is the fraction of the band covered by text-colour pixels
	// outside stripes.
	StrokeDensity float64 `json:"stroke_density"`
	// CharHeight is the height of the tallest text line over the band's
	// height.
	CharHeight float64 `json:"char_height"`
	// Glyphs is the number of glyph-sized blobs of text colour.
	Glyphs int `json:"glyphs"`
}

// TextLine is a line of text.
type TextLine struct {
	Y      float64 `json:"y"`      // centre, 0..1
	Height float64 `json:"height"` // fraction of the band's height
	X0     float64 `json:"x0"`     // left end, 0..1
	X1     float64 `json:"x1"`     // right end, 0..1
}

// Hashes are perceptual hashes of the normalised band, hex-encoded.
type Hashes struct {
	// DHash is a 64-bit difference hash of 9x8 grey cells (16 hex digits).
	DHash string `json:"dhash"`
	// PHash is a 64-bit DCT hash of 32x32 grey cells (16 hex digits).
	PHash string `json:"phash"`
	// ColorLayout is 16x4 cells of mean CIELAB, 3 bytes a cell (L*2.55,
	// a+128, b+128), row by row (384 hex digits).
	ColorLayout string `json:"color_layout"`
}

// Label names a known band (evidence).
type Label struct {
	Brand string `json:"brand"`
	Line  string `json:"line"`
}

// Options tune Compute.
type Options struct {
	// OCR reads the band's text; nil leaves Typography.Text empty.
	OCR OCR
	// Flat says the image is a flat, upright band filling the frame (a
	// rendering or a scan): no search, no unrolling.
	Flat bool
	// DetectFlat, without Flat, takes the image as a flat band when it
	// looks like one: at least twice as wide as high, no cigar silhouette
	// in it, and printed (few colours, with lettering or ornaments).
	// Otherwise the band is searched for as in a photo. Band.Flat says
	// which was taken.
	DetectFlat bool
	// Context bounds OCR; nil means context.Background().
	Context context.Context
}

// ErrEmpty is returned for images too small to describe.
var ErrEmpty = errors.New("fingerprint: image too small")

// ErrBlank is returned for images of (nearly) one colour: a blank page, a
// wall, a lens cap. There is no band to describe, and a fingerprint of the
// noise would match something at random.
var ErrBlank = errors.New("fingerprint: the image is blank (nearly one colour)")

// Compute describes the band in img.
func Compute(img image.Image, opts Options) (*Fingerprint, error) {
	if err := describable(img); err != nil {
		return nil, err
	}
	return compute(img, opts, nil, false)
}

// describable is ErrEmpty for an image too small to describe.
func describable(img image.Image) error {
	if b := img.Bounds(); b.Dx() < 16 || b.Dy() < 4 {
		return ErrEmpty
	}
	return nil
}

// compute is Compute, with the band's box (in source pixels) given when
// known (tests); evidence's keypoints are those of a known band
// (EvidenceKeypoints, repeated corners kept), a photo's those of whatever
// it shows (KeypointsMax, repeated corners left out).
func compute(img image.Image, opts Options, given *box, evidence bool) (*Fingerprint, error) {
	rgb, scale := downscale(img, workSide)
	whole := toLab(rgb)
	if blank(whole) {
		return nil, ErrBlank
	}
	var b box
	flat := opts.Flat
	switch {
	case given != nil:
		b = *given
		b.cx, b.cy, b.halfW, b.halfH = b.cx/scale, b.cy/scale, b.halfW/scale, b.halfH/scale
	case flat:
		b = frameBox(rgb, flatConfidence(whole))
	case opts.DetectFlat:
		b, flat = locateOrFlat(rgb, whole)
	default:
		b = locate(whole)
	}
	norm := rectify(rgb, b, flat, NormWidth, NormHeight)
	flatten(norm)
	lab := toLab(norm)
	// Structure is compared white-balanced; colours are reported as seen.
	balanced := toLab(grayWorld(norm))

	fp := &Fingerprint{Version: Version}
	fp.Band = bandOf(b, rgb.w, rgb.h, flat)
	pal := palette(lab)
	fp.Colors = pal.colors()
	fp.Layout = layoutOf(lab, pal)
	fp.Typography = typographyOf(lab, pal)
	fp.Hashes = Hashes{DHash: hex64(dHash(balanced)), PHash: hex64(pHash(balanced)), ColorLayout: colourLayout(lab)}
	fp.Vector = vectorOf(balanced)
	fp.Keypoints = keypointsOf(img, evidence)

	fp.Typography.OCR = "unavailable"
	if opts.OCR != nil {
		ctx := opts.Context
		if ctx == nil {
			ctx = context.Background()
		}
		// OCR wants resolution: rectify again from a larger copy.
		big, bigScale := rgb, 1.0
		if scale > 1 {
			big, _ = downscale(img, 1600)
			bigScale = float64(big.w) / float64(rgb.w)
		}
		bb := b
		bb.cx, bb.cy, bb.halfW, bb.halfH = b.cx*bigScale, b.cy*bigScale, b.halfW*bigScale, b.halfH*bigScale
		text, err := opts.OCR.Read(ctx, ocrImage(rectify(big, bb, flat, ocrScale*NormWidth, ocrScale*NormHeight), pal))
		switch {
		case err != nil:
			fp.Typography.OCR = "error"
		case text == "":
			fp.Typography.OCR = "empty"
		default:
			fp.Typography.OCR, fp.Typography.Text = "ok", text
		}
	}
	return fp, nil
}

// NewEvidence computes the fingerprint of a known band and labels it. img
// should be a clean photo of the band on a cigar (e.g. bandart.StudioPhoto),
// or, with opts.Flat or opts.DetectFlat, a flat rendering or scan. With an
// OCR in opts, the evidence also carries what OCR reads on it.
func NewEvidence(img image.Image, label Label, opts Options) (*Fingerprint, error) {
	if err := describable(img); err != nil {
		return nil, err
	}
	fp, err := compute(img, opts, nil, true)
	if err != nil {
		return nil, err
	}
	fp.Label = &label
	return fp, nil
}

func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	r := math.Round(v*p) / p
	if r == 0 {
		return 0 // no "-0"
	}
	return r
}

func r3(v float64) float64 { return round(v, 3) }

func bandOf(b box, w, h int, flat bool) Band {
	var out Band
	out.Flat = flat
	out.Angle = r3(b.angle * 180 / math.Pi)
	out.Confidence = r3(b.conf)
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for i, uv := range [][2]float64{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}} {
		x, y := b.point(uv[0]*b.halfW, uv[1]*b.halfH)
		x, y = clampF(x/float64(w), 0, 1), clampF(y/float64(h), 0, 1)
		out.Corners[i] = [2]float64{r3(x), r3(y)}
		x0, y0, x1, y1 = math.Min(x0, x), math.Min(y0, y), math.Max(x1, x), math.Max(y1, y)
	}
	out.Box = [4]float64{r3(x0), r3(y0), r3(x1), r3(y1)}
	return out
}

// rectify samples the band into a w x h upright image. A photographed band
// is unrolled from the cigar: column t (-1..1) is the angle t*thetaC round
// the cigar, at x = halfW*sin(angle). A flat band is sampled linearly over
// the same part of its length (thetaC of the 90° a band's visible half
// spans).
func rectify(rgb *raster, b box, flat bool, w, h int) *raster {
	out := newRaster(w, h)
	// Average a few samples per output pixel when shrinking.
	sx := max(1, int(math.Ceil(2*b.halfW/float64(w))))
	sy := max(1, int(math.Ceil(2*b.halfH/float64(h))))
	for j := range h {
		for i := range w {
			var acc [3]float64
			for a := range sy {
				v := ((float64(j)+(float64(a)+0.5)/float64(sy))/float64(h)*2 - 1) * b.halfH
				for c := range sx {
					t := (float64(i)+(float64(c)+0.5)/float64(sx))/float64(w)*2 - 1
					var u float64
					if flat {
						u = t * b.halfW * thetaC / (math.Pi / 2)
					} else {
						u = b.halfW * math.Sin(t*thetaC)
					}
					x, y := b.point(u, v)
					p := rgb.bilinear(x, y)
					acc[0] += p[0]
					acc[1] += p[1]
					acc[2] += p[2]
				}
			}
			n := float64(sx * sy)
			k := (j*w + i) * 3
			out.p[k], out.p[k+1], out.p[k+2] = float32(acc[0]/n), float32(acc[1]/n), float32(acc[2]/n)
		}
	}
	return out
}

// ocrScale is how many times the normalised band's size OCR reads: at 2
// tesseract took a third less time but read a line's own words on 35% of
// held-out mild photos of bandgen's bands, against 45% at 3.
const ocrScale = 3

// ocrImage turns a rectified band into grey for OCR: dark text on a light
// ground (inverted when the palette's text colour is lighter than its
// ground), contrast stretched between the 2nd and 98th percentiles, with a
// white margin.
func ocrImage(rgb *raster, p *pal) *image.Gray {
	const pad = 16
	w, h := rgb.w, rgb.h
	g := image.NewGray(image.Rect(0, 0, w+2*pad, h+2*pad))
	for i := range g.Pix {
		g.Pix[i] = 255
	}
	vals := make([]float64, w*h)
	for i := range vals {
		vals[i] = 0.299*float64(rgb.p[i*3]) + 0.587*float64(rgb.p[i*3+1]) + 0.114*float64(rgb.p[i*3+2])
	}
	invert := false
	if p.text >= 0 {
		invert = p.centres[p.text][0] > p.centres[p.ground][0]
	}
	sorted := append([]float64(nil), vals...)
	lo, hi := nth(sorted, len(sorted)/50), nth(sorted, len(sorted)-1-len(sorted)/50)
	if hi-lo < 1 {
		hi = lo + 1
	}
	for i, v := range vals {
		x := clampF((v-lo)/(hi-lo), 0, 1) * 255
		if invert {
			x = 255 - x
		}
		g.Pix[(i/w+pad)*g.Stride+i%w+pad] = uint8(x)
	}
	return g
}
