package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/vitolahq/vitola/internal/telemetry"
)

// observed wraps a driver's connector so that every query and statement
// run for a request (Exec and Query, in or out of a transaction) is a span
// of that request's trace ("sql STORE") and a failure counts as the store's
// error (vitola_store_errors_total). Work outside a request, and prepared
// statements, go straight to the driver. Everything else is the driver's:
// the connection's optional interfaces are passed through.
type observed struct {
	driver.Connector
	store string
	// cacheStmts keeps each connection's prepared statements (stmtcache.go).
	cacheStmts bool
	// writes, when set, queues the process's writers to the file
	// (writelock.go).
	writes *writeLock
}

func (o observed) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := o.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	oc := &conn{Conn: c, store: o.store, span: "sql " + o.store, writes: o.writes}
	if o.cacheStmts {
		oc.stmts = newStmtCache()
	}
	return oc, nil
}

// dsnConnector is a driver.Connector over a driver that has none.
type dsnConnector struct {
	dsn string
	drv driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

type conn struct {
	driver.Conn
	store, span string
	stmts       *stmtCache // nil: none
	writes      *writeLock // nil: none
	// inTx: a transaction is open on the connection; heldTx: it holds writes.
	inTx, heldTx bool
}

// lockWrite takes the write lock for a statement outside a transaction that
// may write; release is nil when there is nothing to release.
func (c *conn) lockWrite(ctx context.Context, query string) (release *writeLock, err error) {
	if c.writes == nil || c.inTx || readOnly(query) || isCheckpoint(query) {
		return nil, nil
	}
	held, err := c.writes.lock(ctx)
	if !held {
		return nil, err
	}
	return c.writes, nil
}

// endTx ends the connection's transaction and releases its write lock.
func (c *conn) endTx() {
	if c.heldTx {
		c.writes.unlock()
	}
	c.inTx, c.heldTx = false, false
}

func (c *conn) Close() error {
	if c.stmts != nil {
		c.stmts.close()
	}
	return c.Conn.Close()
}

var sqlSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// start begins observing a query when ctx belongs to an observed request
// (t nil otherwise); done ends it.
func (c *conn) start(ctx context.Context) (context.Context, *telemetry.Telemetry, trace.Span) {
	t := telemetry.FromContext(ctx)
	if t == nil {
		return ctx, nil, nil
	}
	ctx, span := telemetry.Start(ctx, c.span, sqlSpan...)
	return ctx, t, span
}

// done records a query's span (its text, never its arguments: they may be
// personal) and counts its failure.
func (c *conn) done(t *telemetry.Telemetry, span trace.Span, query string, err error) {
	if t == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.query.text", query))
		if err != nil {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
	if err != nil && !errors.Is(err, driver.ErrSkip) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.StoreError(c.store)
	}
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	release, err := c.lockWrite(ctx, query)
	if err != nil {
		return nil, err
	}
	if release != nil {
		defer release.unlock()
	}
	ctx, t, span := c.start(ctx)
	var res driver.Result
	cached := false
	if c.stmts != nil && cacheable(args) {
		res, cached, err = c.stmts.exec(ctx, c.Conn, query, args)
	}
	if !cached && err == nil {
		res, err = e.ExecContext(ctx, query, args)
	}
	c.done(t, span, query, err)
	return res, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	release, err := c.lockWrite(ctx, query)
	if err != nil {
		return nil, err
	}
	ctx, t, span := c.start(ctx)
	var rows driver.Rows
	cached := false
	if c.stmts != nil && cacheable(args) {
		rows, cached, err = c.stmts.query(ctx, c.Conn, query, args)
	}
	if !cached && err == nil {
		rows, err = q.QueryContext(ctx, query, args)
	}
	c.done(t, span, query, err)
	if release != nil {
		if err != nil {
			release.unlock()
			return nil, err
		}
		return &lockedRows{Rows: rows, l: release}, nil
	}
	return rows, err
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.writes == nil {
		return c.beginTx(ctx, opts)
	}
	// Every SQLite transaction here writes (_txlock=immediate takes the
	// file's write lock at BEGIN).
	held, err := c.writes.lock(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.beginTx(ctx, opts)
	if err != nil {
		if held {
			c.writes.unlock()
		}
		return nil, err
	}
	c.inTx, c.heldTx = true, held
	return &lockedTx{Tx: tx, c: c}, nil
}

func (c *conn) beginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	//lint:ignore SA1019 the driver has nothing else
	return c.Conn.Begin()
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip // database/sql's default conversion
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

var (
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
)
