// Package logging builds the platform's zerolog logger: JSON lines for machines,
// a readable console format when the output is a terminal.
package logging

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// New returns a logger writing to w at the given level ("debug", "info", "warn",
// "error"; empty means info). format is "json", "console" or "auto" (console on a
// terminal, JSON otherwise).
func New(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(level))
		if err != nil {
			return zerolog.Nop(), err
		}
		lvl = l
	}
	if format == "console" || (format == "auto" && IsTerminal(w)) {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
