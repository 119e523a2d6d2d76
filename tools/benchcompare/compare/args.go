package compare

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Benchmarks are the names -only picks from, in the order they run and print.
var Benchmarks = []string{"join", "search", "payments", "identify", "import"}

// Options are the command's settings.
type Options struct {
	// Ref is the commit (anything git rev-parse takes) the working tree is
	// compared with.
	Ref string
	// Rounds each benchmark runs on each side, alternating which goes first.
	Rounds int
	// Phase is how long one side's turn at a load benchmark lasts.
	Phase time.Duration
	// Only are the benchmarks to run (every one when empty).
	Only []string
	// Scale is how many copies of the demo lines the large catalog holds
	// (100: 105,700 cigars).
	Scale int
	// FullImports is how many times each side imports the large catalog
	// from scratch (the first import also serves search and import).
	FullImports int
	// Work is the directory for the builds, data and logs; empty: a new
	// temporary directory, removed at the end unless Keep.
	Work string
	Keep bool
}

// Defaults are sized for about ten minutes on two cores.
func Defaults() Options {
	return Options{Rounds: 5, Phase: 5 * time.Second, Scale: 100, FullImports: 1}
}

// Usage is printed for -h and wrong arguments.
const Usage = `Usage: go run ./tools/benchcompare -ref COMMIT [flags]   (make bench-compare REF=COMMIT)

Builds vitola from COMMIT and from the working tree (uncommitted changes
included), prepares the same data for each with its own commands, and runs the
main benchmarks against each binary's server on loopback, alternately, round
by round; then prints per metric the median of each side, the ratio new/old
and its spread over the rounds.

Flags:
`

// ParseArgs reads the command line (without the program's name). Each flag's
// default comes from its environment variable (BENCH_ROUNDS, BENCH_SECONDS,
// BENCH_ONLY, BENCH_SCALE), so `make bench-compare` passes them through.
func ParseArgs(args []string, getenv func(string) string) (Options, error) {
	o := Defaults()
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var only, seconds string
	envErrs := map[string]error{} // by flag: a flag given overrides its variable, good or bad
	envInt := func(flagName, name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			envErrs[flagName] = fmt.Errorf("%s=%q: want a whole number", name, v)
			return def
		}
		return n
	}
	fs.StringVar(&o.Ref, "ref", getenv("REF"), "the commit to compare the working tree with, e.g. 96e9e18 (env REF; required)")
	fs.IntVar(&o.Rounds, "rounds", envInt("rounds", "BENCH_ROUNDS", o.Rounds), "rounds of every benchmark on each side, alternating which side goes first (env BENCH_ROUNDS)")
	fs.StringVar(&seconds, "seconds", envOr(getenv, "BENCH_SECONDS", "5"), "seconds of load per side per round (env BENCH_SECONDS)")
	fs.StringVar(&only, "only", getenv("BENCH_ONLY"), "comma-separated benchmarks to run: "+strings.Join(Benchmarks, ", ")+"; empty: all (env BENCH_ONLY)")
	fs.IntVar(&o.Scale, "scale", envInt("scale", "BENCH_SCALE", o.Scale), "copies of the demo lines in the large catalog: 100 is 105,700 cigars (env BENCH_SCALE)")
	fs.IntVar(&o.FullImports, "full-imports", envInt("full-imports", "BENCH_FULL_IMPORTS", o.FullImports), "times each side imports the large catalog from scratch, alternating (env BENCH_FULL_IMPORTS)")
	fs.StringVar(&o.Work, "work", "", "directory for builds, data and server logs (kept); empty: a temporary one, removed at the end")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (its path is printed)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, &HelpError{Text: Usage + flagDefaults(fs)}
		}
		return o, &UsageError{Err: err, Text: Usage + flagDefaults(fs)}
	}
	fs.Visit(func(f *flag.Flag) { delete(envErrs, f.Name) })
	misuse := func(format string, a ...any) (Options, error) {
		return o, &UsageError{Err: fmt.Errorf(format, a...), Text: Usage + flagDefaults(fs)}
	}
	switch {
	case len(envErrs) > 0:
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(envErrs)) {
			errs = append(errs, envErrs[name])
		}
		return misuse("%w", errors.Join(errs...))
	case fs.NArg() > 0:
		return misuse("unexpected argument %q: give the commit as -ref", fs.Arg(0))
	case strings.TrimSpace(o.Ref) == "":
		return misuse("-ref is required: the commit to compare the working tree with (make bench-compare REF=96e9e18)")
	case strings.HasPrefix(o.Ref, "-"):
		return misuse("-ref %q: not a commit", o.Ref)
	case o.Rounds < 1:
		return misuse("-rounds %d: give 1 or more (3 or more for a verdict)", o.Rounds)
	case o.Scale < 1 || o.Scale > 1000:
		return misuse("-scale %d: give 1 to 1000 copies of the demo lines", o.Scale)
	case o.FullImports < 1:
		return misuse("-full-imports %d: give 1 or more", o.FullImports)
	}
	s, err := strconv.ParseFloat(seconds, 64)
	if err != nil || s < 0.1 || s > 600 {
		return misuse("-seconds %q: give a number of seconds from 0.1 to 600", seconds)
	}
	o.Phase = time.Duration(s * float64(time.Second))
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case !slices.Contains(Benchmarks, name):
			return misuse("-only: unknown benchmark %q (want %s)", name, strings.Join(Benchmarks, ", "))
		case !slices.Contains(o.Only, name):
			o.Only = append(o.Only, name)
		}
	}
	return o, nil
}

// Selected reports whether the benchmark named runs.
func (o Options) Selected(name string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, name)
}

// HelpError is -h: the caller prints Text and succeeds.
type HelpError struct{ Text string }

func (e *HelpError) Error() string { return "help requested" }

// UsageError is wrong usage: the caller prints Text and fails with Err.
type UsageError struct {
	Err  error
	Text string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func flagDefaults(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
