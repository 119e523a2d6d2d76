// Package evidence makes band evidence: reference fingerprints of known bands,
// from an operator's images (vitola evidence add) or, for the demo catalog,
// from rendered bands. The demo evidence is generated ahead of time by a
// separate command (tools/evidencegen: `make evidence`, which reads the catalog's demo
// lines) and committed (demo.jsonl.gz), so start-up only loads it and this
// package needs nothing of the catalog.
package evidence

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// ErrNoBand is wrapped by Describe's errors for images with no band it can
// describe: blank, too small, or a band it could not locate confidently.
var ErrNoBand = errors.New("no band found")

// Describe makes the evidence fingerprint of a known band. flat says the
// image is a scan or render of the band alone, upright, filling the frame;
// without it such an image is recognised by itself (Band.Flat says so),
// and anything else is taken for a photo of the band on a cigar. An image
// whose band cannot be located confidently is refused (ErrNoBand): its
// fingerprint would describe whatever the locator settled on and match
// nothing well.
func Describe(img image.Image, label fingerprint.Label, flat bool, ocr fingerprint.OCR) (*fingerprint.Fingerprint, error) {
	fp, err := fingerprint.NewEvidence(img, label, fingerprint.Options{Flat: flat, DetectFlat: true, OCR: ocr})
	switch {
	case errors.Is(err, fingerprint.ErrBlank):
		return nil, fmt.Errorf("%w: the image is blank (nearly one colour)", ErrNoBand)
	case errors.Is(err, fingerprint.ErrEmpty):
		return nil, fmt.Errorf("%w: the image is too small (at least 16x4 pixels)", ErrNoBand)
	case err != nil:
		return nil, err
	case fp.Band.Confidence < fingerprint.ConfidentBand && fp.Band.Flat:
		return nil, fmt.Errorf("%w: the image does not look like a printed band (confidence %.2f, at least %.2f wanted): give a scan or render of the band alone, cropped to it", ErrNoBand, fp.Band.Confidence, fingerprint.ConfidentBand)
	case fp.Band.Confidence < fingerprint.ConfidentBand:
		return nil, fmt.Errorf("%w: the band could not be located confidently (confidence %.2f, at least %.2f wanted): give a sharp, frontal photo of the band on its cigar with the cigar across the frame, or a flat scan of the band alone, upright and cropped to it", ErrNoBand, fp.Band.Confidence, fingerprint.ConfidentBand)
	}
	return fp, nil
}

// DemoRecord is one line of the demo evidence file: a demo line's band,
// attached to the line's first vitola (a band tells lines apart, not vitolas).
type DemoRecord struct {
	CigarID     string          `json:"cigarId"`
	Brand       string          `json:"brand"`
	Line        string          `json:"line"`
	Fingerprint json.RawMessage `json:"fingerprint"`
}

// DemoFingerprint describes a demo line's band from a studio photo of its
// rendering: evidence taken from a photo of a band on a cigar matches photos
// from users better than a flat rendering does (the recognition benchmark
// measures both).
func DemoFingerprint(brand, line string) (json.RawMessage, error) {
	fp, err := Describe(bandart.StudioPhoto(brand, line), fingerprint.Label{Brand: brand, Line: line}, false, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", brand, line, err)
	}
	return json.Marshal(fp)
}

// WriteDemo writes demo evidence records as the committed file holds them:
// gzipped JSON Lines, byte-identical for the same records.
func WriteDemo(w io.Writer, recs []DemoRecord) error {
	// A fixed header time keeps the file byte-identical across runs.
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	zw.ModTime = time.Time{}
	enc := json.NewEncoder(zw)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return zw.Close()
}

//go:embed demo.jsonl.gz
var demoFile []byte

// Demo reads the committed demo evidence.
func Demo() ([]DemoRecord, error) {
	zr, err := gzip.NewReader(bytes.NewReader(demoFile))
	if err != nil {
		return nil, fmt.Errorf("demo evidence: %w", err)
	}
	var out []DemoRecord
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		var r DemoRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("demo evidence: %w", err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// SeedDemo stores the demo evidence in one transaction.
func SeedDemo(ctx context.Context, store matching.EvidenceStore) error {
	recs, err := Demo()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	ev := make([]*matching.Evidence, len(recs))
	for i, r := range recs {
		ev[i] = &matching.Evidence{ID: ids.Derive(ids.Evidence, "demo\x00"+r.CigarID), CigarID: r.CigarID, Source: "demo", Fingerprint: r.Fingerprint, CreatedAt: now}
	}
	return store.AddEvidence(ctx, ev)
}
