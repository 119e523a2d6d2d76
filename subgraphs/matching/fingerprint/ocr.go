package fingerprint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os/exec"
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
	// PSM is the page segmentation mode (--psm); 0 means 6 (a block of text:
	// a band has a large and a small line).
	PSM int
	// Timeout bounds one run; 0 means 10 s.
	Timeout time.Duration
}

// TesseractAvailable reports whether the tesseract program is on $PATH.
func TesseractAvailable() bool {
	_, err := exec.LookPath("tesseract")
	return err == nil
}

// Read runs tesseract on img.
func (t Tesseract) Read(ctx context.Context, img image.Image) (string, error) {
	path := t.Path
	if path == "" {
		path = "tesseract"
	}
	lang, psm, timeout := t.Lang, t.PSM, t.Timeout
	if lang == "" {
		lang = "eng"
	}
	if psm == 0 {
		psm = 6
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	var in bytes.Buffer
	if err := png.Encode(&in, img); err != nil {
		return "", fmt.Errorf("tesseract: encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "stdin", "stdout", "--psm", fmt.Sprint(psm), "-l", lang)
	cmd.Stdin = &in
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
