package sqldb_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

// Writes reach the database file from the WAL in the background within
// seconds, long before SQLite's own checkpoint (20,000 pages) would copy
// them; no commit waits for that copy.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := sqldbtest.MustOpen(t, sqldb.Config{DataDir: dir}, "checkpoints", itemMigrations)
	file := filepath.Join(dir, "checkpoints.db")
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	before := size()
	for i := range 200 {
		if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO items (name) VALUES (?)`), fmt.Sprint(i, strings.Repeat("x", 2000))); err != nil {
			t.Fatal(err)
		}
	}
	// 200 rows of 2 kB are about 100 pages, in the WAL until a checkpoint.
	deadline := time.Now().Add(30 * time.Second) // seconds when quiet
	for size() < before+100*4096 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes, %d before the writes: no checkpoint copied them", size(), before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
