// Package timestamp writes times the way every Vitola response does: RFC 3339
// in UTC with milliseconds, e.g. 2026-01-02T03:04:05.000Z.
package timestamp

import "time"

// Layout is the time layout of every timestamp in responses.
const Layout = "2006-01-02T15:04:05.000Z"

// Format writes t in UTC with Layout.
func Format(t time.Time) string { return t.UTC().Format(Layout) }
