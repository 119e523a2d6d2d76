package sqldb

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// writeLock queues a process's writers to one SQLite file in Go. SQLite
// lets one writer in at a time and makes the others wait in its busy
// handler, which sleeps 1, 2, 5, 10… ms between tries (blocking a thread):
// under load a write that found the file busy waited milliseconds after it
// was free, and the payments API's p99 grew with it. Writers of this
// process now wait on a channel and start the moment the file is free;
// SQLite's busy handler still arbitrates between processes (the CLI).
//
// A writer waits at most busyTimeout for the lock, then goes ahead without
// it, as before: a transaction left open, or one that writes through
// another connection while it holds the lock, gets SQLite's verdict
// (SQLITE_BUSY after the timeout) instead of hanging.
type writeLock struct {
	ch chan struct{}
	// writes counts the writers that held the lock (checkpoint.go).
	writes atomic.Uint64
}

// busyTimeout is how long a writer waits for the file (SQLite's busy_timeout
// too).
const busyTimeout = 10 * time.Second

var (
	writeLocksMu sync.Mutex
	writeLocks   = map[string]*writeLock{}
)

// writeLockFor returns the lock of the SQLite file at path, one per file in
// the process however many times it is opened.
func writeLockFor(path string) *writeLock {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	writeLocksMu.Lock()
	defer writeLocksMu.Unlock()
	l, ok := writeLocks[path]
	if !ok {
		l = &writeLock{ch: make(chan struct{}, 1)}
		writeLocks[path] = l
	}
	return l
}

// lock takes the lock; held is false when it went ahead without it after
// busyTimeout.
func (l *writeLock) lock(ctx context.Context) (held bool, err error) {
	select {
	case l.ch <- struct{}{}:
		return true, nil
	default:
	}
	t := time.NewTimer(busyTimeout)
	defer t.Stop()
	select {
	case l.ch <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, nil
	}
}

func (l *writeLock) unlock() {
	l.writes.Add(1)
	<-l.ch
}

// readOnly reports whether a statement run outside a transaction only reads:
// a SELECT (SQLite's WITH may lead an INSERT, so it counts as a write).
func readOnly(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT")
}

// lockedTx releases the write lock when its transaction ends.
type lockedTx struct {
	driver.Tx
	c *conn
}

func (t *lockedTx) Commit() error {
	defer t.c.endTx()
	return t.Tx.Commit()
}

func (t *lockedTx) Rollback() error {
	defer t.c.endTx()
	return t.Tx.Rollback()
}

// lockedRows releases the write lock when a writing query's rows close
// (SQLite commits an autocommit statement when it is reset).
type lockedRows struct {
	driver.Rows
	l *writeLock
}

func (r *lockedRows) Close() error {
	err := r.Rows.Close()
	if r.l != nil {
		r.l.unlock()
		r.l = nil
	}
	return err
}
