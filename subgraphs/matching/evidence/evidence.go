// Package evidence makes band evidence: reference fingerprints of known bands,
// from an operator's images (vitola evidence add) or, for the demo catalog,
// from rendered bands. The demo evidence is generated ahead of time and
// committed (demo.jsonl.gz; `make evidence` rebuilds it), so start-up only
// loads it.
package evidence

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/bandart"
	"github.com/vitolahq/vitola/subgraphs/matching/fingerprint"
)

// Describe makes the evidence fingerprint of a known band: flat is for scans
// and renders that show the band alone, upright, filling the frame.
func Describe(img image.Image, label fingerprint.Label, flat bool, ocr fingerprint.OCR) (json.RawMessage, error) {
	fp, err := fingerprint.NewEvidence(img, label, fingerprint.Options{Flat: flat, OCR: ocr})
	if err != nil {
		return nil, err
	}
	return json.Marshal(fp)
}

// DemoRecord is one line of the demo evidence file: a demo line's band,
// attached to the line's first vitola (a band tells lines apart, not vitolas).
type DemoRecord struct {
	CigarID     string          `json:"cigarId"`
	Brand       string          `json:"brand"`
	Line        string          `json:"line"`
	Fingerprint json.RawMessage `json:"fingerprint"`
}

// DemoLine describes one demo line's band from a studio photo of its
// rendering: evidence taken from a photo of a band on a cigar matches photos
// from users better than a flat rendering does (the recognition benchmark
// measures both).
func DemoLine(l catalogdemo.Line) (DemoRecord, error) {
	photo := bandart.StudioPhoto(l.Brand, l.Name)
	fp, err := Describe(photo, fingerprint.Label{Brand: l.Brand, Line: l.Name}, false, nil)
	if err != nil {
		return DemoRecord{}, fmt.Errorf("%s %s: %w", l.Brand, l.Name, err)
	}
	return DemoRecord{CigarID: catalog.CigarID(l.Brand, l.Name+" "+l.Vitolas[0].Name), Brand: l.Brand, Line: l.Name, Fingerprint: fp}, nil
}

// GenerateDemo writes the demo evidence of every demo line as gzipped JSON
// Lines, reporting progress.
func GenerateDemo(w io.Writer, progress func(done, total int)) error {
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		return err
	}
	// A fixed header time keeps the file byte-identical across runs.
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	zw.ModTime = time.Time{}
	enc := json.NewEncoder(zw)
	for i, l := range facts.Lines {
		rec, err := DemoLine(l)
		if err != nil {
			return err
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
		if progress != nil {
			progress(i+1, len(facts.Lines))
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
