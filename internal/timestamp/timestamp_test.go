package timestamp_test

import (
	"testing"
	"time"

	"github.com/vitolahq/vitola/internal/timestamp"
)

func TestFormat(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC):                    "2026-01-02T03:04:05.000Z",
		time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC):            "2026-01-02T03:04:05.123Z",
		time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("CET", 3600)): "2026-01-02T03:04:05.000Z",
	} {
		if got := timestamp.Format(in); got != want {
			t.Errorf("Format(%v) = %s, want %s", in, got, want)
		}
	}
}

// Format writes what time.Format writes with Layout, for any time: years
// outside 0-9999 go through time.Format itself.
func TestFormatAgreesWithTimeFormat(t *testing.T) {
	times := []time.Time{time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 28, 9, 5, 7, 1000000, time.UTC)}
	for i := range 2000 {
		times = append(times, time.Unix(int64(i)*7919*86400+int64(i)*3607, int64(i)*1234567))
	}
	for _, in := range times {
		if got, want := timestamp.Format(in), in.UTC().Format(timestamp.Layout); got != want {
			t.Fatalf("Format(%v) = %s, want %s", in, got, want)
		}
		if got, want := string(timestamp.Append([]byte("x"), in)), "x"+in.UTC().Format(timestamp.Layout); got != want {
			t.Fatalf("Append(%v) = %s, want %s", in, got, want)
		}
	}
}

func FuzzFormat(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		in := time.Unix(sec%(1<<40), nsec)
		if got, want := timestamp.Format(in), in.UTC().Format(timestamp.Layout); got != want {
			t.Fatalf("Format(%v) = %s, want %s", in, got, want)
		}
	})
}
