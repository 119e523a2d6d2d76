package sqldb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jmoiron/sqlx"

	"github.com/vitolahq/vitola/internal/sqldb"
	"github.com/vitolahq/vitola/internal/sqldb/sqldbtest"
)

var itemMigrations = fstest.MapFS{"00001_items.sql": {Data: []byte(`-- +goose Up
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
-- +goose Down
DROP TABLE items;
`)}}

// Statements reused across calls (SQLite keeps them per connection) give the
// same answers as fresh ones: after errors, with the same query's rows still
// open, inside transactions, concurrently, and after the schema changes.
func TestStatementsAreReusedSafely(t *testing.T) {
	sqldbtest.Each(t, "stmts", itemMigrations, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		insert := db.Rebind(`INSERT INTO items (id, name) VALUES (?, ?)`)
		byID := db.Rebind(`SELECT name FROM items WHERE id = ?`)
		for i := 1; i <= 20; i++ {
			if _, err := db.ExecContext(ctx, insert, i, fmt.Sprintf("item %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		// A failed statement leaves its cached form usable.
		if _, err := db.ExecContext(ctx, insert, 1, "again"); err == nil {
			t.Fatal("a duplicate ID was inserted")
		}
		if _, err := db.ExecContext(ctx, insert, 21, "item 21"); err != nil {
			t.Fatalf("after a failure: %v", err)
		}
		// The same query while its rows are open, in one transaction (one
		// connection): the second gets a statement of its own. (PostgreSQL
		// runs one query at a time on a connection.)
		err := db.InTx(ctx, func(tx *sqlx.Tx) error {
			if db.Dialect != sqldb.SQLite {
				return nil
			}
			above := tx.Rebind(`SELECT id FROM items WHERE id > ? ORDER BY id`)
			rows, err := tx.QueryxContext(ctx, above, 18)
			if err != nil {
				return err
			}
			defer rows.Close()
			var outer []int
			for rows.Next() {
				var id int
				rows.Scan(&id)
				outer = append(outer, id)
				var inner []int
				if err := tx.SelectContext(ctx, &inner, above, 19); err != nil {
					return err
				}
				if len(inner) != 2 || inner[0] != 20 {
					return fmt.Errorf("inner query: %v", inner)
				}
			}
			if len(outer) != 3 || outer[0] != 19 || outer[2] != 21 {
				return fmt.Errorf("outer query: %v", outer)
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 50 {
					id := 1 + (w*50+i)%21
					var name string
					if err := db.GetContext(ctx, &name, byID, id); err != nil || name != fmt.Sprintf("item %d", id) {
						t.Errorf("item %d: %q %v", id, name, err)
						return
					}
				}
			})
		}
		wg.Wait()
		// A statement prepared before a schema change sees the new schema.
		// (pgx's own statement cache fails the first query after such a
		// change, then prepares again; migrations run before serving.)
		if db.Dialect != sqldb.SQLite {
			return
		}
		star := db.Rebind(`SELECT * FROM items WHERE id = ?`)
		if cols := columns(t, db, star); len(cols) != 2 {
			t.Fatalf("columns %v", cols)
		}
		if _, err := db.ExecContext(ctx, `ALTER TABLE items ADD COLUMN note TEXT NOT NULL DEFAULT 'none'`); err != nil {
			t.Fatal(err)
		}
		if cols := columns(t, db, star); len(cols) != 3 || cols[2] != "note" {
			t.Fatalf("columns after ALTER TABLE: %v", cols)
		}
	})
}

func columns(t *testing.T, db *sqldb.DB, query string) []string {
	t.Helper()
	// Every connection of the pool: each has its statement.
	var out []string
	for range 4 {
		rows, err := db.QueryxContext(context.Background(), query, 1)
		if err != nil {
			t.Fatal(err)
		}
		out, _ = rows.Columns()
		rows.Close()
	}
	return out
}
