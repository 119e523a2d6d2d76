package sqlstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/ids"
	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
	"github.com/vitolahq/vitola/subgraphs/matching"
	"github.com/vitolahq/vitola/subgraphs/matching/sqlstore"
)

func TestEvidenceRoundTripsAndMovesTheVersion(t *testing.T) {
	sqldbtest.Each(t, sqlstore.StoreName, sqlstore.Migrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		st := sqlstore.New(db)
		v0, err := st.EvidenceVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 23, 10, 0, 0, 123_000_000, time.UTC)
		ev := []*matching.Evidence{
			{ID: ids.New(ids.Evidence), CigarID: "cig_a", Source: "demo", Fingerprint: json.RawMessage(`{"version":"x","hashes":{"d":"ff"}}`), CreatedAt: at},
			{ID: ids.New(ids.Evidence), CigarID: "cig_b", Source: "band.jpg", Fingerprint: json.RawMessage(`{"version":"x"}`), CreatedAt: at},
		}
		if err := st.AddEvidence(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if v1, _ := st.EvidenceVersion(ctx); v1 != v0+1 {
			t.Fatalf("version %d after a write, want %d", v1, v0+1)
		}
		all, err := st.AllEvidence(ctx)
		if err != nil || len(all) != 2 {
			t.Fatalf("AllEvidence: %d %v", len(all), err)
		}
		byCigar := map[string]*matching.Evidence{}
		for _, e := range all {
			byCigar[e.CigarID] = e
		}
		if got := byCigar["cig_a"]; string(got.Fingerprint) != string(ev[0].Fingerprint) || !got.CreatedAt.Equal(at) || got.Source != "demo" {
			t.Fatalf("round trip: %+v", got)
		}
		if n, _ := st.CountEvidence(ctx); n != 2 {
			t.Fatalf("count %d", n)
		}
		// A failed write lands nothing and leaves the version.
		if err := st.AddEvidence(ctx, []*matching.Evidence{{ID: "evd_new", CigarID: "cig_c", Fingerprint: json.RawMessage(`{}`), CreatedAt: at}, ev[0]}); err == nil {
			t.Fatal("a duplicate ID was stored")
		}
		if n, _ := st.CountEvidence(ctx); n != 2 {
			t.Fatalf("count %d after a failed write", n)
		}
	})
}

// TestWatchTellsOfEvidence: Watch tells once it watches, then of evidence
// added through another handle on the store (another process, as `vitola
// evidence` is), as it commits.
func TestWatchTellsOfEvidence(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			other := sqlstore.New(sqldbtest.MustOpen(t, cfg, sqlstore.StoreName, sqlstore.Migrations))
			w := sqldbtest.StartWatch(t, ctx, st.Watch)
			w.Told("watching")
			ev := []*matching.Evidence{{ID: ids.New(ids.Evidence), CigarID: "cig_a", Source: "band.jpg", Fingerprint: json.RawMessage(`{}`), CreatedAt: time.Now()}}
			if err := other.AddEvidence(ctx, ev); err != nil {
				t.Fatal(err)
			}
			w.Told("evidence added")
		})
	}
}
