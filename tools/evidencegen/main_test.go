package main

import (
	"bytes"
	"os"
	"testing"

	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
)

// The committed demo evidence is what the renderer and the fingerprint make
// today: `make evidence` rebuilds it after either changes.
func TestDemoEvidenceIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating the demo evidence takes seconds; skipped in -short mode")
	}
	var buf bytes.Buffer
	if err := generate(&buf, nil); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../subgraphs/matching/evidence/demo.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Fatal("subgraphs/matching/evidence/demo.jsonl.gz is stale: run `make evidence` and commit it")
	}
}

func TestDemoEvidenceCoversEveryDemoLine(t *testing.T) {
	recs, err := evidence.Demo()
	if err != nil {
		t.Fatal(err)
	}
	facts, err := catalogdemo.LoadFacts()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(facts.Lines) {
		t.Fatalf("%d demo evidence records for %d demo lines", len(recs), len(facts.Lines))
	}
	for i, l := range facts.Lines {
		if recs[i].Brand != l.Brand || recs[i].Line != l.Name {
			t.Fatalf("demo evidence %d is %s %s, demo line %d is %s %s", i, recs[i].Brand, recs[i].Line, i, l.Brand, l.Name)
		}
	}
}
