// Command bandsamples writes pictures of the synthetic bands the demo's
// evidence was made from (subgraphs/matching/bandart): with -out, a contact
// sheet of the demo lines' renderings and sample photos of a few bands at
// each perturbation level, for a person to look at; with -served, the photos
// the platform serves under /examples/bands/ (examples/bands, committed; a
// test checks they are what this writes), which identify matches in the demo.
//
//	go run ./examples/bandsamples -out /tmp/bands [-all]
//	go run ./examples/bandsamples -served examples/bands
package main

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"

	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
)

func main() {
	out := flag.String("out", "", "directory to write sheet.png and the sample photos into")
	all := flag.Bool("all", false, "put every demo line on the sheet (default: the first 48)")
	served := flag.String("served", "", "directory to write the photos served under /examples/bands/ into (examples/bands)")
	flag.Parse()
	if (*out == "") == (*served == "") {
		fmt.Fprintln(os.Stderr, "bandsamples: give -out DIR (the sheet and samples) or -served DIR (the served photos)")
		os.Exit(2)
	}
	var err error
	if *served != "" {
		err = writeServed(*served)
		*out = *served
	} else {
		err = run(*out, *all)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bandsamples:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

// servedBands are the demo lines whose photos /examples/bands/ serves: a
// careful hand-held photo of each (bandart.Mild), as a JPEG small enough to
// send inline as a data URL in one shell command.
var servedBands = []struct{ file, brand, line string }{
	{"padron-1964-anniversary.jpg", "Padrón", "1964 Anniversary Series"},
	{"oliva-serie-v.jpg", "Oliva", "Serie V"},
	{"arturo-fuente-hemingway.jpg", "Arturo Fuente", "Hemingway"},
}

// servedPhotos renders the served photos, by file name.
func servedPhotos() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, b := range servedBands {
		var buf bytes.Buffer
		photo := bandart.Photo(bandart.Render(bandart.DesignFor(b.brand, b.line), 800), bandart.Mild, 1)
		if err := jpeg.Encode(&buf, photo, &jpeg.Options{Quality: 90}); err != nil {
			return nil, fmt.Errorf("%s: %w", b.file, err)
		}
		out[b.file] = buf.Bytes()
	}
	return out, nil
}

func writeServed(dir string) error {
	photos, err := servedPhotos()
	if err != nil {
		return err
	}
	for name, b := range photos {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run(dir string, all bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := catalogdemo.LoadFacts()
	if err != nil {
		return err
	}
	lines := f.Lines
	if len(lines) > 48 && !all {
		lines = lines[:48]
	}
	const w, cols = 300, 4
	rows := (len(lines) + cols - 1) / cols
	sheet := image.NewRGBA(image.Rect(0, 0, cols*(w+6), rows*(w/bandart.Aspect+6)))
	for i, l := range lines {
		img := bandart.Render(bandart.DesignFor(l.Brand, l.Name), w)
		at := image.Pt((i%cols)*(w+6), (i/cols)*(w/bandart.Aspect+6))
		draw.Draw(sheet, img.Rect.Add(at), img, image.Point{}, draw.Src)
	}
	if err := writePNG(filepath.Join(dir, "sheet.png"), sheet); err != nil {
		return err
	}
	for i, bl := range [][2]string{{"Oliva", "Serie V"}, {"Arturo Fuente", "Hemingway"}, {"Cohiba", "Behike"}} {
		band := bandart.Render(bandart.DesignFor(bl[0], bl[1]), 800)
		for _, lv := range []bandart.Level{bandart.Studio, bandart.Mild, bandart.Strong} {
			for s := range 2 {
				if err := writePNG(filepath.Join(dir, fmt.Sprintf("%d-%v-%d.png", i, lv, s)), bandart.Photo(band, lv, int64(s))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writePNG(path string, img image.Image) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(fh, img); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}
