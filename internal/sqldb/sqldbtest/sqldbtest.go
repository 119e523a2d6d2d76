// Package sqldbtest opens throw-away stores for tests: a SQLite file in a temporary
// directory always, and a PostgreSQL schema of the test's own when
// VITOLA_TEST_DATABASE_URL is set. With VITOLA_TEST_REQUIRE_SERVICES=1 (CI) a
// missing PostgreSQL fails the test instead of skipping it.
package sqldbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vitolahq/vitola/internal/sqldb"
)

// Backends returns the store configurations to run storage tests against: SQLite,
// and PostgreSQL when configured. Each PostgreSQL config has a schema prefix of its
// own, dropped when the test ends.
func Backends(t testing.TB) map[string]sqldb.Config {
	t.Helper()
	out := map[string]sqldb.Config{sqldb.SQLite: {DataDir: t.TempDir()}}
	if cfg, ok := Postgres(t); ok {
		out[sqldb.Postgres] = cfg
	}
	return out
}

// Postgres returns a PostgreSQL config with a fresh schema prefix, or false (after
// logging why, as "missing PostgreSQL: …", which make test's summary counts)
// when no server is configured. It fails the test instead when services are
// required.
func Postgres(t testing.TB) (sqldb.Config, bool) {
	t.Helper()
	url := os.Getenv("VITOLA_TEST_DATABASE_URL")
	if url == "" {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1 but VITOLA_TEST_DATABASE_URL is not set")
		}
		t.Log("missing PostgreSQL: set VITOLA_TEST_DATABASE_URL=postgres://… to run these tests on it too")
		return sqldb.Config{}, false
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("PostgreSQL unreachable at VITOLA_TEST_DATABASE_URL: %v", err)
		}
		t.Logf("missing PostgreSQL: unreachable at VITOLA_TEST_DATABASE_URL (%v)", err)
		return sqldb.Config{}, false
	}
	conn.Close(ctx)
	prefix := "t" + randomHex(6) + "_"
	t.Cleanup(func() { DropSchemas(t, url, prefix) })
	return sqldb.Config{DatabaseURL: url, SchemaPrefix: prefix}, true
}

// DropSchemas removes every schema whose name starts with prefix.
func DropSchemas(t testing.TB, url, prefix string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Logf("drop test schemas: %v", err)
		return
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, prefix)
	if err != nil {
		t.Logf("list test schemas: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Logf("list test schemas: %v", err)
		return
	}
	for _, n := range names {
		if _, err := conn.Exec(ctx, `DROP SCHEMA "`+n+`" CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", n, err)
		}
	}
}

// Each runs fn once per backend, as a subtest named after it, with the store
// called name opened and migrated.
func Each(t *testing.T, name string, migrations fs.FS, fn func(t *testing.T, db *sqldb.DB)) {
	for backend, cfg := range Backends(t) {
		t.Run(backend, func(t *testing.T) {
			fn(t, MustOpen(t, cfg, name, migrations))
		})
	}
}

// MustOpen opens the store or fails the test, closing it at cleanup.
func MustOpen(t testing.TB, cfg sqldb.Config, name string, migrations fs.FS) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), cfg, name, migrations)
	if err != nil {
		t.Fatalf("open %s store: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
