package fingerprint

import "math"

// ConfidentBand is the Band.Confidence from which the band is taken to be
// found. Evidence below it is refused: it would describe whatever the
// locator settled on and match nothing well. Measured on synthetic photos
// of 60 bands (one studio, two mild and two careless photos each): every
// studio photo scores 0.48 or more and all but one mild photo 0.29 or
// more; below 0.2 lie 20 of the 35 careless photos whose band was not
// found, and one photo whose band was.
const ConfidentBand = 0.2

// Flat detection (Options.DetectFlat): a flat band is wider than it is
// high, shows no cigar, and looks printed.
const (
	// flatAspect is the least width:height of a flat band's image. Photos
	// are 4:3 to 16:9; a band's front is 2.5 to 5 times as wide as high.
	flatAspect = 2.0
	// flatCigarQuality is the cigar locator's quality from which the image
	// is a photo of a band on a cigar (flat renders score at most 0.22).
	flatCigarQuality = 0.3
)

// flatConfidence says how much the whole working image looks like a
// printed band, 0..1: few colours cover it (a palette of up to five
// colours explains at least 70% of its pixels within ΔE 15; flat renders,
// also as poor JPEGs, reach 0.85, noise about 0.5), and it has content
// (lettering and ornaments: at least six small regions contrasting with
// the ground; grey noise has none, a rendered band dozens).
func flatConfidence(lab *raster) float64 {
	n := lab.w * lab.h
	p := palette(lab)
	in := 0
	for i := range n {
		c := [3]float64{float64(lab.p[i*3]), float64(lab.p[i*3+1]), float64(lab.p[i*3+2])}
		if labDist(c, p.centres[p.assign[i]]) < 15 {
			in++
		}
	}
	fit := float64(in) / float64(n)

	seg := segment(box3(box3(lab)), 6, 16)
	ground := 0
	for l, st := range seg.stats {
		if st.area > seg.stats[ground].area {
			ground = l
		}
	}
	g := seg.stats[ground]
	marks := 0
	for l, o := range seg.stats {
		if l != ground && o.area >= 3 && o.area < n/3 &&
			math.Hypot(math.Hypot(o.meanL-g.meanL, o.meanA-g.meanA), o.meanB-g.meanB) > 20 {
			marks++
		}
	}
	return clampF((fit-0.6)/0.2, 0, 1) * math.Min(1, float64(marks)/6)
}

// frameBox is the whole working image as the band (a flat band).
func frameBox(rgb *raster, conf float64) box {
	return box{cx: float64(rgb.w) / 2, cy: float64(rgb.h) / 2, halfW: float64(rgb.w) / 2, halfH: float64(rgb.h) / 2, conf: conf}
}

// locateOrFlat is locate, first taking an image that looks like a flat
// band (wide, no cigar found, printed) as one. It says which it took.
func locateOrFlat(rgb, lab *raster) (box, bool) {
	if float64(rgb.w) < flatAspect*float64(rgb.h) {
		return locate(lab), false
	}
	cb, q := locateCigar(lab)
	if q < flatCigarQuality {
		if c := flatConfidence(lab); c >= ConfidentBand {
			return frameBox(rgb, c), true
		}
	}
	return locateAfterCigar(lab, cb, q), false
}
