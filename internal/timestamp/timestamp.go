// Package timestamp writes times the way every Vitola response does: RFC 3339
// in UTC with milliseconds, e.g. 2026-01-02T03:04:05.000Z.
package timestamp

import "time"

// Layout is the time layout of every timestamp in responses.
const Layout = "2006-01-02T15:04:05.000Z"

// Format writes t in UTC with Layout.
func Format(t time.Time) string {
	var b [len(Layout)]byte
	return string(Append(b[:0], t))
}

// Append appends t in UTC with Layout. It writes the digits itself: a
// payment session's document holds six timestamps, and time.Format's
// layout interpreter was a few percent of a create and status pair.
func Append(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, Layout)
	}
	hour, minute, second := t.Clock()
	b = digits(b, year, 4)
	b = digits(append(b, '-'), int(month), 2)
	b = digits(append(b, '-'), day, 2)
	b = digits(append(b, 'T'), hour, 2)
	b = digits(append(b, ':'), minute, 2)
	b = digits(append(b, ':'), second, 2)
	b = digits(append(b, '.'), t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// digits appends v (0 <= v < 10^n) in n decimal digits.
func digits(b []byte, v, n int) []byte {
	start := len(b)
	for range n {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start && v > 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}
