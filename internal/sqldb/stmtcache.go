package sqldb

import (
	"context"
	"database/sql/driver"
	"reflect"
)

// stmtCache keeps a connection's prepared statements by query text. The
// SQLite driver compiles a query's SQL on every call otherwise: a quarter of
// the payments API's CPU went to SQLite's parser. (pgx caches statements by
// itself, so PostgreSQL connections have none.) A connection is used by one
// goroutine at a time (database/sql), so the cache needs no lock; a
// statement whose rows are still open is busy, and a query that needs it
// then is prepared afresh and closed after use, as before.
type stmtCache struct {
	stmts map[string]*cachedStmt
}

// maxCachedStmts bounds a connection's statements; a store's hot queries are
// a few dozen.
const maxCachedStmts = 256

type cachedStmt struct {
	stmt driver.Stmt
	busy bool // its rows are open
}

func newStmtCache() *stmtCache { return &stmtCache{stmts: map[string]*cachedStmt{}} }

// cacheable: only queries with arguments are kept. Those without are
// migrations (scripts of many statements, run once) and one-off statements.
func cacheable(args []driver.NamedValue) bool { return len(args) > 0 }

// get returns query's statement, prepared on c when new; ok is false when
// the cached one is busy (the caller prepares its own).
func (sc *stmtCache) get(ctx context.Context, c driver.Conn, query string) (*cachedStmt, bool, error) {
	if s, ok := sc.stmts[query]; ok {
		return s, !s.busy, nil
	}
	st, err := prepare(ctx, c, query)
	if err != nil {
		return nil, false, err
	}
	if len(sc.stmts) >= maxCachedStmts {
		for q, s := range sc.stmts { // evict one idle statement, any
			if !s.busy {
				s.stmt.Close()
				delete(sc.stmts, q)
				break
			}
		}
	}
	s := &cachedStmt{stmt: st}
	sc.stmts[query] = s
	return s, true, nil
}

func (sc *stmtCache) close() {
	for q, s := range sc.stmts {
		s.stmt.Close()
		delete(sc.stmts, q)
	}
}

func prepare(ctx context.Context, c driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := c.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Prepare(query)
}

// exec runs query through its cached statement; ok is false when the
// statement cannot serve (the caller runs query as usual).
func (sc *stmtCache) exec(ctx context.Context, c driver.Conn, query string, args []driver.NamedValue) (driver.Result, bool, error) {
	s, ok, err := sc.get(ctx, c, query)
	if err != nil || !ok {
		return nil, false, err
	}
	e, ok := s.stmt.(driver.StmtExecContext)
	if !ok {
		return nil, false, nil
	}
	res, err := e.ExecContext(ctx, args)
	return res, true, err
}

// query runs query through its cached statement, busy until the rows close;
// ok is false when the statement cannot serve.
func (sc *stmtCache) query(ctx context.Context, c driver.Conn, query string, args []driver.NamedValue) (driver.Rows, bool, error) {
	s, ok, err := sc.get(ctx, c, query)
	if err != nil || !ok {
		return nil, false, err
	}
	q, ok := s.stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, false, nil
	}
	rows, err := q.QueryContext(ctx, args)
	if err != nil {
		return nil, true, err
	}
	s.busy = true
	return &stmtRows{Rows: rows, s: s}, true, nil
}

// stmtRows frees its statement for the next query when closed.
type stmtRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *stmtRows) Close() error {
	r.s.busy = false
	return r.Rows.Close()
}

// The driver's column type information passes through (sql.Rows.ColumnTypes).

func (r *stmtRows) ColumnTypeDatabaseTypeName(i int) string {
	if c, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return c.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *stmtRows) ColumnTypeScanType(i int) reflect.Type {
	if c, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return c.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *stmtRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if c, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return c.ColumnTypeNullable(i)
	}
	return false, false
}
