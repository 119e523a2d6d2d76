package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// `vitola evidence add --cigar cig_… FILE...`. Every file is described first;
// then all land in one transaction, or none.
func runEvidence(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return errors.New("evidence: want `vitola evidence add --cigar CIGAR_ID FILE...` (JPEG, PNG or WebP photos or scans of the cigar's band)")
	}
	fs := newFlagSet("evidence add", stderr)
	var store storeSettings
	store.register(fs, getenv)
	cigarID := fs.String("cigar", "", "the catalog cigar's public ID (cig_…) the band belongs to (required)")
	flat := fs.Bool("flat", false, "the images are flat scans or renders of the band alone, upright and filling the frame (default: photos of a band on a cigar)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	files := fs.Args()
	switch {
	case !ids.Valid(*cigarID, ids.Cigar):
		return fmt.Errorf("evidence add: --cigar %q: give the catalog cigar's public ID (cig_…); find it with GET /v1/cigars/search", *cigarID)
	case len(files) == 0:
		return errors.New("evidence add: give one or more image FILEs after the flags")
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
	progress := progressPrinter(stderr, "images")
	var ev []*matching.Evidence
	for i, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("evidence add: %w (nothing was added)", err)
		}
		img, err := decoder.Decode(data)
		if err != nil {
			return fmt.Errorf("evidence add: %s: %w (nothing was added)", name, err)
		}
		fp, err := evidence.Describe(img.Image, fingerprint.Label{Brand: b.Name, Line: c.Name}, *flat, ocr)
		if err != nil {
			return fmt.Errorf("evidence add: %s: no band could be described: %w (nothing was added)", name, err)
		}
		ev = append(ev, &matching.Evidence{ID: ids.New(ids.Evidence), CigarID: c.ID, Source: filepath.Base(name), Fingerprint: fp, CreatedAt: time.Now().UTC()})
		progress(i+1, len(files))
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
