package compare_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

func TestParseArgs(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	none := env()
	tests := []struct {
		name   string
		args   []string
		getenv func(string) string
		want   func(compare.Options) bool
		err    string // part of the message of a usage error; "" for none
	}{
		{name: "defaults", args: []string{"-ref", "96e9e18"}, getenv: none, want: func(o compare.Options) bool {
			d := compare.Defaults()
			return o.Ref == "96e9e18" && o.Rounds == d.Rounds && o.Phase == d.Phase && o.Scale == 100 && o.FullImports == 1 && len(o.Only) == 0
		}},
		{name: "flags", args: []string{"-ref", "main", "-rounds", "3", "-seconds", "1.5", "-only", "search, payments,search", "-scale", "10", "-full-imports", "2"}, getenv: none,
			want: func(o compare.Options) bool {
				return o.Rounds == 3 && o.Phase == 1500*time.Millisecond && slices.Equal(o.Only, []string{"search", "payments"}) && o.Scale == 10 && o.FullImports == 2
			}},
		{name: "environment as make passes it", args: nil, getenv: env("REF", "abc123", "BENCH_ROUNDS", "7", "BENCH_SECONDS", "2", "BENCH_ONLY", "import"),
			want: func(o compare.Options) bool {
				return o.Ref == "abc123" && o.Rounds == 7 && o.Phase == 2*time.Second && slices.Equal(o.Only, []string{"import"})
			}},
		{name: "a flag wins over its variable", args: []string{"-ref", "x", "-rounds", "2"}, getenv: env("BENCH_ROUNDS", "9"),
			want: func(o compare.Options) bool { return o.Rounds == 2 }},
		{name: "a flag given overrides a bad variable", args: []string{"-ref", "x", "-rounds", "2"}, getenv: env("BENCH_ROUNDS", "many"),
			want: func(o compare.Options) bool { return o.Rounds == 2 }},
		{name: "a bad variable", args: []string{"-ref", "x"}, getenv: env("BENCH_ROUNDS", "many"), err: `BENCH_ROUNDS="many": want a whole number`},
		{name: "no ref", args: []string{"-rounds", "3"}, getenv: none, err: "-ref is required"},
		{name: "ref as an argument", args: []string{"96e9e18"}, getenv: none, err: `unexpected argument "96e9e18"`},
		{name: "ref like a flag", args: []string{"-ref", "--help"}, getenv: none, err: "not a commit"},
		{name: "unknown benchmark", args: []string{"-ref", "x", "-only", "search,router"}, getenv: none, err: `unknown benchmark "router"`},
		{name: "no rounds", args: []string{"-ref", "x", "-rounds", "0"}, getenv: none, err: "-rounds 0"},
		{name: "too short a phase", args: []string{"-ref", "x", "-seconds", "0.01"}, getenv: none, err: "-seconds"},
		{name: "seconds not a number", args: []string{"-ref", "x", "-seconds", "five"}, getenv: none, err: "-seconds"},
		{name: "scale", args: []string{"-ref", "x", "-scale", "0"}, getenv: none, err: "-scale 0"},
		{name: "unknown flag", args: []string{"-ref", "x", "-round", "3"}, getenv: none, err: "flag provided but not defined: -round"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := compare.ParseArgs(tc.args, tc.getenv)
			if tc.err != "" {
				var usage *compare.UsageError
				if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(usage.Text, "-only") {
					t.Fatalf("error %v, want a usage error saying %q, with the flags", err, tc.err)
				}
				return
			}
			if err != nil || !tc.want(o) {
				t.Fatalf("got %+v, %v", o, err)
			}
		})
	}
}

func TestParseArgsHelp(t *testing.T) {
	_, err := compare.ParseArgs([]string{"-h"}, func(string) string { return "" })
	var help *compare.HelpError
	if !errors.As(err, &help) || !strings.Contains(help.Text, "make bench-compare REF=COMMIT") || !strings.Contains(help.Text, "BENCH_ROUNDS") {
		t.Fatalf("-h: %v", err)
	}
}

func TestSelected(t *testing.T) {
	all := compare.Options{}
	some := compare.Options{Only: []string{"search"}}
	for _, b := range compare.Benchmarks {
		if !all.Selected(b) || some.Selected(b) != (b == "search") {
			t.Errorf("%s: selected by no -only %t, by -only search %t", b, all.Selected(b), some.Selected(b))
		}
	}
}
