// Package bandgen is a second, independent generator of synthetic cigar
// bands and photos of them, for tests only: recognition tuned on one renderer
// (bandart) must also hold on another that shares none of its code, layouts,
// shapes or palettes.
//
// Catalog makes brands of 2–4 lines each. The lines of a brand share the
// brand's design (ground, border, medallion, typefaces, palette) and differ
// mostly in the line's name, sometimes with a small accent of their own (the
// colour of the line's ribbon or panel, a few stars): the case where telling
// a brand's lines apart is hard. Line.Flat draws the design flat, as a scan
// added with `evidence add --flat`; Line.Photo photographs it at a Level,
// either lying flat on a table or wrapped round a cigar, with perspective,
// light, gilt glare, blur, noise, fingers over the band and JPEG at the
// level's qualities. Everything is deterministic in its seed.
//
// Only tests import this package.
package bandgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Brand is a generated brand and its lines.
type Brand struct {
	Name  string
	Lines []Line
}

// Line is one line of a brand: its name and its band's design.
type Line struct {
	Brand, Name string
	d           design
}

// Vitolas are the sizes every generated line comes in (catalog cigars are
// named "LINE VITOLA").
var Vitolas = []string{"Robusto", "Toro"}

var (
	prefixes  = []string{"Casa", "Don", "La", "El", "Hermanos", "Finca", "Villa", "Hacienda", "", "", ""}
	onsets    = []string{"B", "C", "D", "F", "G", "L", "M", "N", "P", "R", "S", "T", "V", "Z", "Br", "Cr", "Tr", "Al", "Or", "Es"}
	vowels    = []string{"a", "e", "i", "o", "u", "a", "e", "o", "ia"}
	codas     = []string{"", "", "n", "r", "l", "s", "nd", "rt"}
	lineWords = []string{
		"Reserva", "Gran Reserva", "Maduro", "Oscuro", "Claro", "Edición Limitada", "Aniversario",
		"Corona Real", "Selección", "Black Label", "Connecticut", "Sun Grown", "Habano", "Cameroon",
		"Tradición", "Vintage 2014", "Sumatra", "Rosado", "Especial", "Fuerte", "Imperial", "Origen",
		"Cosecha 2019", "Double Ligero", "Blue Label", "Signature", "Legado", "Clásico",
	}
)

// surname makes a two- or three-syllable made-up name ("Miravel").
func surname(r *rand.Rand) string {
	var b strings.Builder
	n := 2 + r.IntN(2)
	for i := range n {
		on := onsets[r.IntN(len(onsets))]
		if i > 0 {
			on = strings.ToLower(on)
		}
		b.WriteString(on + vowels[r.IntN(len(vowels))])
		if i == n-1 {
			b.WriteString(codas[r.IntN(len(codas))])
		}
	}
	return b.String()
}

// Catalog makes n brands, each with 2–4 lines, from seed. Brand names are
// distinct; a brand's line names are distinct and may share words
// ("Reserva", "Gran Reserva").
func Catalog(seed uint64, n int) []Brand {
	r := rand.New(rand.NewPCG(seed, 0x62616e6467656e))
	seen := map[string]bool{}
	var out []Brand
	for len(out) < n {
		name := surname(r)
		if p := prefixes[r.IntN(len(prefixes))]; p != "" {
			name = p + " " + name
		}
		if seen[name] || len(name) > 16 {
			continue
		}
		seen[name] = true
		bd := newBrandDesign(r, name)
		b := Brand{Name: name}
		words := r.Perm(len(lineWords))[:2+r.IntN(3)]
		for i, w := range words {
			b.Lines = append(b.Lines, Line{Brand: name, Name: lineWords[w], d: bd.forLine(r, lineWords[w], i)})
		}
		out = append(out, b)
	}
	return out
}

// Lines lists every line of the brands, brand by brand.
func Lines(brands []Brand) []Line {
	var out []Line
	for _, b := range brands {
		out = append(out, b.Lines...)
	}
	return out
}

// String names the line as "Brand / Line".
func (l Line) String() string { return fmt.Sprintf("%s / %s", l.Brand, l.Name) }
