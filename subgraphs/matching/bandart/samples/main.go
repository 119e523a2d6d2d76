// Command samples writes pictures of the synthetic bands for a person to look
// at: a contact sheet of the demo lines' renderings and sample photos of a few
// bands at each perturbation level.
//
//	go run ./subgraphs/matching/bandart/samples -out /tmp/bands [-all]
package main

import (
	"flag"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"

	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
)

func main() {
	out := flag.String("out", "", "directory to write sheet.png and the sample photos into (required)")
	all := flag.Bool("all", false, "put every demo line on the sheet (default: the first 48)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "samples: give -out DIR")
		os.Exit(2)
	}
	if err := run(*out, *all); err != nil {
		fmt.Fprintln(os.Stderr, "samples:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

func run(dir string, all bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The demo lines, as the committed demo evidence names them (the
	// matching subgraph reads nothing of the catalog).
	lines, err := evidence.Demo()
	if err != nil {
		return err
	}
	if len(lines) > 48 && !all {
		lines = lines[:48]
	}
	const w, cols = 300, 4
	rows := (len(lines) + cols - 1) / cols
	sheet := image.NewRGBA(image.Rect(0, 0, cols*(w+6), rows*(w/bandart.Aspect+6)))
	for i, l := range lines {
		img := bandart.Render(bandart.DesignFor(l.Brand, l.Line), w)
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
