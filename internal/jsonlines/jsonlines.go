// Package jsonlines reads the JSON Lines files that `vitola import` loads: one
// JSON object per line, every line checked before anything is written, so that a
// bad file is reported by line number and leaves the stores as they were.
package jsonlines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxLineBytes bounds one line of a file.
const MaxLineBytes = 1 << 20

// LineError is a problem with one line of a file.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Read decodes every non-blank line of r into a T and passes it to check with its
// line number; it stops at the first bad line. Unknown fields are refused: a
// misspelt field would otherwise be lost silently. what names a record in errors
// ("a venue").
func Read[T any](r io.Reader, what string, check func(rec *T, line int) error) ([]T, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), MaxLineBytes)
	var out []T
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec T
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, &LineError{n, fmt.Errorf("not %s object: %w", what, err)}
		}
		if dec.More() {
			return nil, &LineError{n, errors.New("more than one JSON value on the line")}
		}
		if err := check(&rec, n); err != nil {
			return nil, &LineError{n, err}
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("a line is longer than %d bytes", MaxLineBytes)
		}
		return nil, err
	}
	return out, nil
}

// Text trims a required text field and checks its length in characters.
func Text(field, value string, max int) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", fmt.Errorf("%s is required", field)
	}
	if utf8.RuneCountInString(v) > max {
		return "", fmt.Errorf("%s is longer than %d characters", field, max)
	}
	return v, nil
}

// Time parses a required RFC 3339 date-time field ("2026-01-02T19:00:00Z" or with
// an offset).
func Time(field, value string) (time.Time, error) {
	if strings.TrimSpace(value) == "" {
		return time.Time{}, fmt.Errorf("%s is required", field)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(value))
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 date-time such as 2026-01-02T19:00:00Z", field, value)
	}
	return t.UTC(), nil
}

// WebURL checks an optional absolute http or https URL field.
func WebURL(field string, value *string) error {
	if value == nil {
		return nil
	}
	u, err := url.Parse(*value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(*value) > 2048 {
		return fmt.Errorf("%s %q is not an http or https URL (at most 2048 bytes)", field, *value)
	}
	return nil
}

// Progress calls progress, when not nil, after every 500th record and the last:
// imports report how far they are without flooding a terminal.
func Progress(progress func(done, total int), done, total int) {
	if progress != nil && (done%500 == 0 || done == total) {
		progress(done, total)
	}
}
