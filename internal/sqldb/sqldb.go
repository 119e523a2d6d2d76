// Package sqldb opens a subgraph's own store: a SQLite file under the data
// directory (the embedded default) or a PostgreSQL schema of its own (scale-out),
// and brings it to the newest migration under a lock, so that replicas starting
// together never race. Every query goes through sqlx with Rebind, so the same SQL
// serves both.
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // the embedded default's driver
)

func init() {
	// sqlx does not know modernc's driver name; without this Rebind leaves '?'.
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
}

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Config says where the stores live. DatabaseURL wins over DataDir.
type Config struct {
	DataDir     string // SQLite files: DataDir/<name>.db
	DatabaseURL string // postgres://…: one schema per store
	// SchemaPrefix is put before each PostgreSQL schema name; tests use it to get a
	// schema of their own.
	SchemaPrefix string
}

// Backend names the backend Config selects, for logs and /health.
func (c Config) Backend() string {
	if c.DatabaseURL != "" {
		return Postgres
	}
	return SQLite
}

// DB is one store: a sqlx handle plus what the SQL needs to know about it.
type DB struct {
	*sqlx.DB
	Dialect string
	Name    string
	schema  string // PostgreSQL's schema of the store
	path    string // SQLite's file of the store
	stop    func() // ends the store's background work (nil: none)
}

// Close ends the store's background work and closes it.
func (db *DB) Close() error {
	if db.stop != nil {
		db.stop()
	}
	return db.DB.Close()
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// Open opens (creating when needed) the store called name and applies the
// migrations in fsys (goose SQL files at its root).
func Open(ctx context.Context, cfg Config, name string, migrations fs.FS) (*DB, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("sqldb: invalid store name %q", name)
	}
	var (
		db  *DB
		err error
	)
	if cfg.DatabaseURL != "" {
		db, err = openPostgres(ctx, cfg, name, migrations)
	} else {
		db, err = openSQLite(ctx, cfg.DataDir, name, migrations)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", name, err)
	}
	return db, nil
}

func openSQLite(ctx context.Context, dir, name string, migrations fs.FS) (*DB, error) {
	if dir == "" {
		return nil, errors.New("no data directory given (--data)")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, name+".db")
	// WAL lets readers run beside the one writer; immediate transactions take the
	// write lock up front so concurrent writers queue on busy_timeout instead of
	// failing with SQLITE_BUSY half-way through; the process's own writers
	// queue in Go before that (writelock.go). Temporary storage in memory
	// keeps statement journals (every upsert checked against foreign keys
	// keeps one) out of a temporary file: an import of 1,000 cigars wrote
	// 9,000 times to one. The WAL is copied back into the database in the
	// background (checkpoint.go); SQLite's own copy is the backstop.
	dsn := "file:" + path + fmt.Sprintf("?_pragma=journal_mode(WAL)&_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()) +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=temp_store(memory)" +
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)&_txlock=immediate", backstopPages)
	writes := writeLockFor(path)
	sdb, err := openObserved("sqlite", dsn, name, true, writes)
	if err != nil {
		return nil, err
	}
	// Idle connections are kept up to the pool's size: database/sql keeps two
	// by default, and a busy store then opened a connection (opening the
	// file, running the DSN's pragmas, reading the schema, losing the cached
	// statements) for a tenth of its queries.
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	db := &DB{DB: sdb, Dialect: SQLite, Name: name, path: path}

	// A file lock serialises migrations across processes sharing the directory.
	unlock, err := lockFile(ctx, filepath.Join(dir, "."+name+".migrate.lock"))
	if err != nil {
		sdb.Close()
		return nil, err
	}
	defer unlock()
	if err := migrate(ctx, db, goose.DialectSQLite3, migrations); err != nil {
		sdb.Close()
		return nil, err
	}
	db.stop = checkpoints(sdb.DB, writes, checkpointEvery)
	return db, nil
}

func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open migration lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("take migration lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for migration lock: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func openPostgres(ctx context.Context, cfg Config, name string, migrations fs.FS) (*DB, error) {
	schema := cfg.SchemaPrefix + name
	if !validName.MatchString(schema) {
		return nil, fmt.Errorf("invalid schema name %q", schema)
	}
	pcfg, err := pgx.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", redactErr(err, cfg.DatabaseURL))
	}
	// Every connection of this store sees only its own schema first: the
	// subgraph's tables and its own goose version table.
	pcfg.RuntimeParams["search_path"] = schema
	sdb := sqlx.NewDb(sql.OpenDB(observed{Connector: stdlib.GetConnector(*pcfg), store: name}), "pgx")
	// As many idle connections as open ones: under load, a pool that keeps
	// fewer closes connections only to open them again (a PostgreSQL backend
	// each, and pgx's statement cache lost).
	sdb.SetMaxOpenConns(16)
	sdb.SetMaxIdleConns(16)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	db := &DB{DB: sdb, Dialect: Postgres, Name: name, schema: schema}

	// A session advisory lock, held on one connection, serialises schema creation
	// and migrations across replicas.
	conn, err := sdb.Conn(ctx)
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close()
	h := fnv.New64a()
	h.Write([]byte("vitola-migrate:" + schema))
	lockID := int64(h.Sum64() >> 1)
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockID); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockID)
	if _, err := conn.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS "`+schema+`"`); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	if err := migrate(ctx, db, goose.DialectPostgres, migrations); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// openObserved opens a database/sql driver by name with its queries
// observed (observe.go) and, with cacheStmts, its statements kept
// (stmtcache.go); writes (nil: none) queues its writers (writelock.go).
func openObserved(driverName, dsn, store string, cacheStmts bool, writes *writeLock) (*sqlx.DB, error) {
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close()
	var connector driver.Connector = dsnConnector{dsn: dsn, drv: drv}
	if dc, ok := drv.(driver.DriverContext); ok {
		if connector, err = dc.OpenConnector(dsn); err != nil {
			return nil, err
		}
	}
	return sqlx.NewDb(sql.OpenDB(observed{Connector: connector, store: store, cacheStmts: cacheStmts, writes: writes}), driverName), nil
}

func migrate(ctx context.Context, db *DB, dialect goose.Dialect, migrations fs.FS) error {
	p, err := goose.NewProvider(dialect, db.DB.DB, migrations, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// redactErr keeps a password in a connection URL out of error text.
func redactErr(err error, url string) error {
	msg := err.Error()
	if i := strings.Index(url, "://"); i >= 0 {
		if at := strings.LastIndex(url, "@"); at > i {
			msg = strings.ReplaceAll(msg, url[i+3:at], "***")
		}
	}
	return errors.New(msg)
}

// Ping checks the store answers, for /health.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return db.DB.PingContext(ctx)
}

// InTx runs fn in a transaction, committing when it returns nil.
func (db *DB) InTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// IsNoRows reports a query that found nothing.
func IsNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
