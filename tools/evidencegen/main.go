// Command evidencegen writes the demo evidence (make evidence): every demo line's band,
// rendered and fingerprinted. It reads the catalog's demo lines at generate
// time, so that the matching subgraph itself only loads the committed file
// and imports nothing of the catalog.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/vitolahq/vitola/subgraphs/catalog"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
)

func main() {
	var buf bytes.Buffer
	err := generate(&buf, func(done, total int) {
		if done%25 == 0 || done == total {
			fmt.Fprintf(os.Stderr, "%d/%d demo bands\n", done, total)
		}
	})
	if err == nil {
		err = os.WriteFile("subgraphs/matching/evidence/demo.jsonl.gz", buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "evidencegen:", err)
		os.Exit(1)
	}
	fmt.Println("wrote subgraphs/matching/evidence/demo.jsonl.gz")
}

// generate writes the demo evidence of every demo line, each attached to the
// line's first vitola, reporting progress.
func generate(w io.Writer, progress func(done, total int)) error {
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		return err
	}
	recs := make([]evidence.DemoRecord, len(facts.Lines))
	for i, l := range facts.Lines {
		fp, err := evidence.DemoFingerprint(l.Brand, l.Name)
		if err != nil {
			return err
		}
		recs[i] = evidence.DemoRecord{CigarID: catalog.CigarID(l.Brand, l.Name+" "+l.Vitolas[0].Name), Brand: l.Brand, Line: l.Name, Fingerprint: fp}
		if progress != nil {
			progress(i+1, len(facts.Lines))
		}
	}
	return evidence.WriteDemo(w, recs)
}
