package sqldb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

// TestWatchTellsOfCommits: Watch tells once it watches, then of each write
// committed through another handle on the store (another process, as an
// import is), and of none rolled back. While nothing is written it reads
// nothing (PostgreSQL listens; SQLite on Linux is told by the kernel), and on
// SQLite it follows a write-ahead log deleted with the store's last
// connection and made anew by the next.
func TestWatchTellsOfCommits(t *testing.T) {
	for backend, cfg := range sqldbtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watched := sqldbtest.MustOpen(t, cfg, "watched", itemMigrations)
			writer := sqldbtest.MustOpen(t, cfg, "watched", itemMigrations)
			var reads, ids atomic.Int64
			version := func(ctx context.Context) (v int64, err error) {
				reads.Add(1)
				err = watched.GetContext(ctx, &v, `SELECT COUNT(*) FROM items`)
				return
			}
			w := sqldbtest.StartWatch(t, ctx, func(ctx context.Context, changed func()) error {
				return watched.Watch(ctx, "items", version, changed)
			})
			quiet := func(what string) { t.Helper(); w.Quiet(what, 300*time.Millisecond) }
			write := func(db *sqldb.DB, name string, commit bool) {
				t.Helper()
				tx, err := db.BeginTxx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO items (id, name) VALUES (?, ?)`), ids.Add(1), name); err != nil {
					t.Fatal(err)
				}
				if err := db.Notify(ctx, tx, "items"); err != nil {
					t.Fatal(err)
				}
				end := tx.Commit
				if !commit {
					end = tx.Rollback
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
			}

			w.Told("watching")
			before := reads.Load()
			quiet("nothing")
			if n := reads.Load() - before; n > 0 && (backend == sqldb.Postgres || runtime.GOOS == "linux") {
				t.Errorf("the version was read %d times while nothing was written; want none", n)
			}
			write(writer, "one", true)
			w.Told("a write")
			quiet("one write twice")
			write(writer, "rolled back", false)
			quiet("a rolled-back write")

			if backend == sqldb.SQLite {
				// Every connection closed, SQLite deletes the log; the
				// next writer makes a new one.
				writer.Close()
				watched.SetMaxIdleConns(0)
				wal := filepath.Join(cfg.DataDir, "watched.db-wal")
				if _, err := os.Stat(wal); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the log is still there with every connection closed: %v", err)
				}
				again := sqldbtest.MustOpen(t, cfg, "watched", itemMigrations)
				write(again, "two", true)
				w.Told("a write to a new log")
			}
			cancel()
			if err := w.Stopped(); !errors.Is(err, context.Canceled) {
				t.Fatalf("the watch stopped with %v; want context.Canceled", err)
			}
		})
	}
}
