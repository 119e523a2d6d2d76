package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// Change notifications, PostgreSQL's LISTEN and NOTIFY: a write that calls
// Notify in its transaction wakes, when it commits, every Listen of the same
// channel of the same store, in any process. Channels are the store's own:
// their names carry its schema, as several stores (and tests' schemas) share
// one database. SQLite has nothing of the kind across processes: there,
// Notify does nothing and Listen refuses (ErrNoNotifications), and a reader
// polls a change counter instead.

// ErrNoNotifications is Listen on a SQLite store.
var ErrNoNotifications = errors.New("sqldb: SQLite has no change notifications")

// Notify wakes the store's listeners of channel when tx commits (PostgreSQL;
// nothing on SQLite). A rolled-back transaction notifies no one.
func (db *DB) Notify(ctx context.Context, tx *sqlx.Tx, channel string) error {
	if db.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, '')`, db.channel(channel)); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// Listen calls notified once listening, then whenever a transaction that
// called Notify(channel) commits, until ctx ends or the connection fails; it
// returns why it stopped. It holds a connection of the store's pool for that
// long, and discards it after.
func (db *DB) Listen(ctx context.Context, channel string, notified func()) error {
	if db.Dialect != Postgres {
		return ErrNoNotifications
	}
	held, err := db.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	defer held.Close()
	var stopped error
	held.Raw(func(dc any) error {
		oc, _ := dc.(*conn) // observed (observe.go)
		var sc *stdlib.Conn
		if oc != nil {
			sc, _ = oc.Conn.(*stdlib.Conn)
		}
		if sc == nil {
			stopped = fmt.Errorf("listen %s: not a pgx connection", channel)
			return nil
		}
		c := sc.Conn()
		if _, err := c.Exec(ctx, `LISTEN "`+db.channel(channel)+`"`); err != nil {
			stopped = fmt.Errorf("listen %s: %w", channel, err)
			return driver.ErrBadConn
		}
		// A write that committed before LISTEN took effect notified no one
		// here: the caller looks now.
		notified()
		for {
			if _, err := c.WaitForNotification(ctx); err != nil {
				stopped = fmt.Errorf("listen %s: %w", channel, err)
				break
			}
			notified()
		}
		// The connection listens, and an ended wait may have left it
		// unusable: the pool must not hand it out again.
		return driver.ErrBadConn
	})
	return stopped
}

// channel is a channel's name on the server: the store's schema and the
// channel, as listeners of one store must not hear another's.
func (db *DB) channel(name string) string { return db.schema + "." + name }
