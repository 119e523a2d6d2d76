package fingerprint

import (
	"bytes"
	"encoding/json"
	"image"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

// DetectFlat takes a flat render as what Flat makes of it, and leaves a
// photo, and a wide crop around a cigar, as they were.
func TestDetectFlat(t *testing.T) {
	same := func(a, b *Fingerprint) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return bytes.Equal(ja, jb)
	}
	for _, bl := range [][2]string{{"Padrón", "1964 Anniversary Series"}, {"Oliva", "Serie V"}, {"Cohiba", "Behike"}} {
		flat := bandart.Render(bandart.DesignFor(bl[0], bl[1]), 800)
		detected, err := Compute(flat, Options{DetectFlat: true})
		if err != nil {
			t.Fatal(err)
		}
		told, _ := Compute(flat, Options{Flat: true})
		if !detected.Band.Flat || !same(detected, told) {
			t.Errorf("%s %s: a flat render with DetectFlat is not what Flat makes of it: %+v", bl[0], bl[1], detected.Band)
		}

		photo := bandart.Photo(flat, bandart.Mild, 5)
		wide := photo.SubImage(image.Rect(0, 180, bandart.PhotoWidth, 540)) // 8:3, the cigar across it
		for name, img := range map[string]image.Image{"photo": photo, "wide crop": wide} {
			detected, _ := Compute(img, Options{DetectFlat: true})
			plain, _ := Compute(img, Options{})
			if detected.Band.Flat || !same(detected, plain) {
				t.Errorf("%s %s, %s: DetectFlat changed the fingerprint: %+v, was %+v", bl[0], bl[1], name, detected.Band, plain.Band)
			}
		}
	}
}
