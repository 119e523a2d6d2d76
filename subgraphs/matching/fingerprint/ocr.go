package fingerprint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// OCR reads the text on an image of a band (rectified, upright, dark or light
// text on a plain ground).
type OCR interface {
	Read(ctx context.Context, img image.Image) (string, error)
}

// Tesseract is an OCR that runs the tesseract command-line program
// (tesseract-ocr 4 or 5): the image goes to its standard input as PNG, the
// text comes from its standard output.
type Tesseract struct {
	// Path is the program; empty means "tesseract" on $PATH.
	Path string
	// Lang is the language (-l); empty means "eng".
	Lang string
	// PSMs are the page segmentation modes (--psm) it reads with, one run
	// each, the readings joined; empty means 6 then 11. Mode 6 (a block of
	// text) reads a band's large and small lines in order; mode 11 (sparse
	// text) finds words among the stripes, end panels and medallions that
	// leave mode 6 reading nothing. On a sample of the demo bands, the brand
	// was read on 19 of 28 studio photos with mode 6 alone and on 22 with
	// both (mild photos: 36 and 44 of 56), for twice the time.
	PSMs []int
	// Timeout bounds one run; 0 means 10 s.
	Timeout time.Duration
}

// TesseractAvailable reports whether the tesseract program is on $PATH.
func TesseractAvailable() bool {
	_, err := exec.LookPath("tesseract")
	return err == nil
}

// Read runs tesseract on img, once per page segmentation mode, and joins
// the distinct readings.
func (t Tesseract) Read(ctx context.Context, img image.Image) (string, error) {
	var in bytes.Buffer
	if err := png.Encode(&in, img); err != nil {
		return "", fmt.Errorf("tesseract: encode: %w", err)
	}
	psms := t.PSMs
	if len(psms) == 0 {
		psms = []int{6, 11}
	}
	var readings []string
	for _, psm := range psms {
		text, err := t.run(ctx, in.Bytes(), psm)
		if err != nil {
			return "", err
		}
		if text != "" && !slices.Contains(readings, text) {
			readings = append(readings, text)
		}
	}
	return strings.Join(readings, " "), nil
}

// run reads a PNG with one page segmentation mode.
func (t Tesseract) run(ctx context.Context, pngData []byte, psm int) (string, error) {
	path, lang, timeout := t.Path, t.Lang, t.Timeout
	if path == "" {
		path = "tesseract"
	}
	if lang == "" {
		lang = "eng"
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "stdin", "stdout", "--psm", fmt.Sprint(psm), "-l", lang)
	cmd.Stdin = bytes.NewReader(pngData)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(cmd.Environ(), "OMP_THREAD_LIMIT=1")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("tesseract: %w", ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("tesseract: %v: %s", err, strings.TrimSpace(errb.String()))
		}
		return "", fmt.Errorf("tesseract: %w", err)
	}
	return strings.Join(strings.Fields(out.String()), " "), nil
}
