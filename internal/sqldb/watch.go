package sqldb

import (
	"context"
	"errors"
	"time"
)

// Watching a store for writes, for the in-memory snapshots that follow it
// (internal/follow). A snapshot could poll its store's version instead, but
// every poll wakes an idle server: twenty a second cost it more CPU than
// anything else it did while idle. Watch is told of writes as they commit,
// by PostgreSQL (LISTEN) or by the kernel (SQLite's write-ahead log changing,
// on Linux), and polls only where neither is at hand.

// PollEvery is how often Watch reads the version where nothing tells it of
// writes (SQLite off Linux). The read takes about 12 µs, but waking an idle
// server for it about 75 µs of CPU: at 50 ms an idle server spends 3.7 ms of
// CPU a second more, and a write waits 25 ms on average to be seen.
const PollEvery = 50 * time.Millisecond

// Watch calls changed once watching, then whenever the store may have
// changed, until ctx ends or the watch fails; it returns why it stopped.
//   - PostgreSQL: when a transaction that called Notify(channel) commits, in
//     any process (Listen).
//   - SQLite: when version moves (channel makes no difference there), read
//     whenever a process writes to the store's write-ahead log (Linux's
//     inotify; between writes the watch costs nothing: no timer, no query),
//     or every PollEvery (elsewhere, or when inotify is out of instances or
//     watches).
func (db *DB) Watch(ctx context.Context, channel string, version func(context.Context) (int64, error), changed func()) error {
	if db.Dialect == Postgres {
		return db.Listen(ctx, channel, changed)
	}
	moved := versionMoves(ctx, version, changed)
	err := watchFile(ctx, db.path+"-wal", moved)
	if !errors.Is(err, errNoFileWatch) {
		return err
	}
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		if _, err := moved(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// errNoFileWatch: the system tells of no file changes (watch_other.go).
var errNoFileWatch = errors.New("sqldb: no file change notifications here")

// versionMoves returns a check that reads version and calls changed when it
// moved since the last check (the first always calls it); moved says so.
func versionMoves(ctx context.Context, version func(context.Context) (int64, error), changed func()) func() (moved bool, err error) {
	seen := int64(-1)
	// The read is not cancelled with ctx (the watch ends with it): for a
	// context that can be, the driver and database/sql each start a
	// goroutine to watch it.
	read := context.WithoutCancel(ctx)
	return func() (bool, error) {
		v, err := version(read)
		if err != nil || v == seen {
			return false, err
		}
		seen = v
		changed()
		return true, nil
	}
}
