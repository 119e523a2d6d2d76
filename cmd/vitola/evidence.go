package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogsql "github.com/vitolahq/vitola/subgraphs/catalog/sqlstore"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
	matchingsql "github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
)

// runEvidence stores reference band images for a catalog cigar:
// `vitola evidence add --cigar cig_… FILE...`. Every file is described first
// (a flat scan is recognised as one; an image whose band cannot be located
// confidently is refused) and what was found is printed, one line a file;
// then all land in one transaction, or none.
func runEvidence(ctx context.Context, cmd command, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlagSet(cmd.path)
	var store storeSettings
	store.register(fs, getenv)
	cigarID := fs.String("cigar", "", "the catalog cigar's public ID (cig_…) the band belongs to (required)")
	flat := fs.Bool("flat", false, "the images are flat scans or renders of the band alone, upright and filling the frame (default: recognised by themselves; anything else is taken for a photo of a band on a cigar)")
	files, err := cmd.parse(fs, args)
	if err != nil {
		return err
	}
	if !ids.Valid(*cigarID, ids.Cigar) {
		return cmd.misuse(fs, "--cigar %q: give the catalog cigar's public ID (cig_…); find it with GET /v1/cigars/search", *cigarID)
	}
	cat, err := catalogsql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer cat.Close()
	c, err := cat.Cigar(ctx, *cigarID)
	if errors.Is(err, catalog.ErrNotFound) {
		return fmt.Errorf("evidence add: no cigar %s in the catalog (nothing was added)", *cigarID)
	}
	if err != nil {
		return err
	}
	b, err := cat.Brand(ctx, c.BrandID)
	if err != nil {
		return fmt.Errorf("evidence add: the cigar's brand: %w", err)
	}
	var ocr fingerprint.OCR
	if fingerprint.TesseractAvailable() {
		ocr = fingerprint.Tesseract{}
	}
	decoder := imagefetch.New(imagefetch.Config{})
	// Every file is described and reported (what was found, or why it was
	// refused) before anything is stored.
	var ev []*matching.Evidence
	var refused []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("evidence add: %w (nothing was added)", err)
		}
		img, err := decoder.Decode(data)
		if err != nil {
			return fmt.Errorf("evidence add: %s: %w (nothing was added)", name, err)
		}
		fp, err := evidence.Describe(img.Image, fingerprint.Label{Brand: b.Name, Line: c.Name}, *flat, ocr)
		if errors.Is(err, evidence.ErrNoBand) {
			fmt.Fprintf(stdout, "%s: refused: %v\n", name, err)
			refused = append(refused, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err != nil {
			return fmt.Errorf("evidence add: %s: %w (nothing was added)", name, err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", name, describeFound(fp, img.Width, img.Height))
		raw, err := json.Marshal(fp)
		if err != nil {
			return fmt.Errorf("evidence add: %s: %w (nothing was added)", name, err)
		}
		ev = append(ev, &matching.Evidence{ID: ids.New(ids.Evidence), CigarID: c.ID, Source: filepath.Base(name), Fingerprint: raw, CreatedAt: time.Now().UTC()})
	}
	switch {
	case len(refused) == 1 && len(files) == 1:
		return fmt.Errorf("evidence add: %s (nothing was added)", refused[0])
	case len(refused) > 0:
		return fmt.Errorf("evidence add: %d of %d images refused, first %s (nothing was added; add the others without them, or replace them)", len(refused), len(files), refused[0])
	}
	st, err := matchingsql.Open(ctx, store.config())
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.AddEvidence(ctx, ev); err != nil {
		return fmt.Errorf("evidence add: %w (nothing was added)", err)
	}
	fmt.Fprintf(stdout, "added %d evidence images for %s (%s %s)\n", len(ev), c.ID, b.Name, c.Name)
	return nil
}

// describeFound says what evidence add found in an image of w x h pixels:
// a flat band or a photo, where the band is (in pixels), how sure the
// locator is, and the text read on it.
func describeFound(fp *fingerprint.Fingerprint, w, h int) string {
	bx := fp.Band.Box
	px := func(v float64, n int) int { return int(math.Round(v * float64(n))) }
	where := fmt.Sprintf("(%d,%d)-(%d,%d) px", px(bx[0], w), px(bx[1], h), px(bx[2], w), px(bx[3], h))
	if fp.Band.Flat {
		where = "flat band filling the frame " + where
	} else {
		where = fmt.Sprintf("photo, band at %s turned %.0f°", where, fp.Band.Angle)
	}
	var text string
	switch fp.Typography.OCR {
	case "ok":
		text = fmt.Sprintf("text %q", fp.Typography.Text)
	case "empty":
		text = "no text read"
	case "unavailable":
		text = "text not read (tesseract is not installed)"
	default:
		text = "text not read (tesseract failed)"
	}
	return fmt.Sprintf("%s, confidence %.2f, %s", where, fp.Band.Confidence, text)
}
