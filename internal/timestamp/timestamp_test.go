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
