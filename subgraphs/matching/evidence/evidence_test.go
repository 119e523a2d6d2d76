package evidence_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	catalogdemo "github.com/vitolahq/vitola/subgraphs/catalog/demo"
	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
	"github.com/vitolahq/vitola/subgraphs/matching/recognize"
	"github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
)

// The committed demo evidence is what the renderer and the fingerprint make
// today: `make evidence` rebuilds it after either changes.
func TestDemoEvidenceIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating the demo evidence takes seconds; skipped in -short mode")
	}
	var buf bytes.Buffer
	if err := evidence.GenerateDemo(&buf, nil); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("demo.jsonl.gz")
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
	facts, _ := catalogdemo.LoadFacts()
	if len(recs) != len(facts.Lines) {
		t.Fatalf("%d demo evidence records for %d demo lines", len(recs), len(facts.Lines))
	}
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		st := sqlstore.New(db)
		if err := evidence.SeedDemo(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		all, _ := st.AllEvidence(context.Background())
		if snap := recognize.Build(all); snap.Len() != len(facts.Lines) || snap.Skipped != 0 {
			t.Fatalf("recognition serves %d of %d demo evidence items (%d skipped)", snap.Len(), len(facts.Lines), snap.Skipped)
		}
	})
}
