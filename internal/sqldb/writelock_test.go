package sqldb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

// Many writers at once (transactions, plain statements, an INSERT …
// RETURNING read as rows), on two handles of one SQLite file: all succeed,
// none is lost, and readers are not held up by a transaction in progress.
func TestConcurrentWritersQueue(t *testing.T) {
	ctx := context.Background()
	cfg := sqldb.Config{DataDir: t.TempDir()}
	a := sqldbtest.MustOpen(t, cfg, "writers", itemMigrations)
	b := sqldbtest.MustOpen(t, cfg, "writers", itemMigrations)
	const workers, each = 12, 40
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Go(func() {
			for i := range each {
				id := w*each + i + 1
				name := fmt.Sprint("item ", id)
				var err error
				switch i % 3 {
				case 0:
					err = db.InTx(ctx, func(tx *sqlx.Tx) error {
						_, err := tx.ExecContext(ctx, `INSERT INTO items (id, name) VALUES (?, ?)`, id, name)
						return err
					})
				case 1:
					_, err = db.ExecContext(ctx, `INSERT INTO items (id, name) VALUES (?, ?)`, id, name)
				case 2:
					var got int
					err = db.GetContext(ctx, &got, `INSERT INTO items (id, name) VALUES (?, ?) RETURNING id`, id, name)
					if err == nil && got != id {
						err = errors.New("RETURNING gave another ID")
					}
				}
				if err != nil {
					t.Errorf("write %d: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	var n int
	if err := a.GetContext(ctx, &n, `SELECT COUNT(*) FROM items`); err != nil || n != workers*each {
		t.Fatalf("%d rows (%v), want %d", n, err, workers*each)
	}
	t.Logf("%d writes in %s", workers*each, time.Since(start).Round(time.Millisecond))

	// A transaction holds the writers, not the readers; a writer whose
	// context ends while it waits gives up with that error.
	tx, err := a.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.GetContext(ctx, &n, `SELECT COUNT(*) FROM items`); err != nil {
		t.Fatalf("a read beside a transaction: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := b.ExecContext(short, `INSERT INTO items (id, name) VALUES (?, ?)`, 100000, "late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer waiting past its deadline: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.ExecContext(ctx, `INSERT INTO items (id, name) VALUES (?, ?)`, 100001, "after")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the writer after the transaction: %v", err)
	}
}
