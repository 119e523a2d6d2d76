package jsonlines_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vitolahq/vitola/internal/jsonlines"
)

type rec struct {
	Name string `json:"name"`
	Line int    `json:"-"`
}

func TestRead(t *testing.T) {
	check := func(r *rec, line int) error {
		r.Line = line
		if r.Name == "" {
			return errors.New("name is required")
		}
		return nil
	}
	got, err := jsonlines.Read(strings.NewReader("{\"name\": \"a\"}\n\n  \r\n{\"name\": \"b\"}"), "a record", check)
	if err != nil || len(got) != 2 || got[1] != (rec{"b", 4}) {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"name": "a"}` + "\n" + `{"name": ""}`, "line 2: name is required"},
		{`{"name": "a", "nmae": "b"}`, `line 1: not a record object: json: unknown field "nmae"`},
		{`{"name": "a"} {"name": "b"}`, "line 1: more than one JSON value on the line"},
		{`["a"]`, "line 1: not a record object"},
		{`{"name": "` + strings.Repeat("a", jsonlines.MaxLineBytes) + `"}`, "a line is longer than 1048576 bytes"},
	} {
		if _, err := jsonlines.Read(strings.NewReader(c.in), "a record", check); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%.40s: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestFieldChecks(t *testing.T) {
	if v, err := jsonlines.Text("name", "  Ember  ", 5); v != "Ember" || err != nil {
		t.Errorf("Text = %q, %v", v, err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(jsonlines.Text("name", " ", 5)), "name is required"},
		{second(jsonlines.Text("name", "ÉÉÉÉÉÉ", 5)), "name is longer than 5 characters"},
		{second(jsonlines.Time("startsAt", "")), "startsAt is required"},
		{second(jsonlines.Time("startsAt", "2026-01-02")), `startsAt "2026-01-02" is not an RFC 3339 date-time`},
		{jsonlines.WebURL("website", ptr("ftp://x.example")), `website "ftp://x.example" is not an http or https URL`},
		{jsonlines.WebURL("website", ptr("https://")), `website "https://" is not an http or https URL`},
	} {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), c.want) {
			t.Errorf("%v, want %q", c.err, c.want)
		}
	}
	if at, err := jsonlines.Time("startsAt", "2026-01-02T03:04:05.678+01:00"); err != nil || at.Format("2006-01-02T15:04:05.000Z07:00") != "2026-01-02T02:04:05.678Z" {
		t.Errorf("Time = %v, %v", at, err)
	}
	if jsonlines.WebURL("website", nil) != nil || jsonlines.WebURL("website", ptr("https://ember.example/a")) != nil {
		t.Error("good websites refused")
	}
	var calls []int
	for done := 1; done <= 1001; done++ {
		jsonlines.Progress(func(done, total int) { calls = append(calls, done) }, done, 1001)
	}
	if len(calls) != 3 || calls[2] != 1001 {
		t.Errorf("Progress reported at %v, want 500 1000 1001", calls)
	}
}

func second[T any](_ T, err error) error { return err }
func ptr(s string) *string               { return &s }
