// Command gotest runs `go test -json` with the arguments given, prints what
// plain `go test` prints (each package's result, build errors, the output of
// failing tests), then one line saying what was skipped and why. Plain
// `go test` hides skips: on a machine without PostgreSQL it passes having
// tested less, and says nothing.
//
//	go run ./tools/gotest -count=1 ./...    (make test runs it)
//
// A test that skips, wholly or in part, because something is missing on the
// machine says so in a line "missing NAME: HINT" (t.Skip, or t.Log when it
// runs without it); the summary counts the tests per NAME. Other skips are by
// design (benchmarks on request, -short) and are counted with their reasons.
// The exit status is go test's.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

func main() {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
	r := newReport(os.Stdout)
	r.read(stdout)
	err = cmd.Wait()
	fmt.Fprintln(os.Stdout, r.summary())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action, Package, Test, Output, ImportPath string
}

type testID struct{ pkg, test string }

// need is something missing on the machine and the tests it cost.
type need struct {
	hint  string
	tests map[testID]bool
}

// report follows a `go test -json` stream: it prints as plain go test would
// and keeps count of what was skipped.
type report struct {
	w       io.Writer
	running map[testID][]string // output of tests not ended yet
	missing map[string]*need    // by NAME of "missing NAME: HINT"
	skipped map[string]int      // other skips, by reason
	order   []string            // reasons in the order first seen
}

func newReport(w io.Writer) *report {
	return &report{w: w, running: map[testID][]string{}, missing: map[string]*need{}, skipped: map[string]int{}}
}

var (
	// logLine is a line of t.Log, t.Skip or t.Error output: "    file.go:12: text".
	logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)
	// missingLine is the marker of a skip for want of something on the machine.
	missingLine = regexp.MustCompile(`^missing (\S[^:]*): (.+)$`)
)

func (r *report) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(r.w, "%s\n", line) // not an event: as it came
			continue
		}
		r.event(e)
	}
	// A stream cut short (go test killed): what never ended is shown.
	r.flushWhere(func(testID) bool { return true })
}

func (r *report) event(e event) {
	id := testID{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Test == "" && e.Action == "output":
		// The package's own lines: "ok  pkg 1.2s", "FAIL pkg", a panic; not
		// the "PASS" that -json's verbose mode adds. Before its verdict,
		// tests that never ended (cut short by a timeout's panic) are shown.
		if strings.HasPrefix(e.Output, "FAIL\t") || strings.HasPrefix(e.Output, "ok  \t") {
			r.flushPackage(e.Package)
		}
		if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
			fmt.Fprint(r.w, e.Output)
		}
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		r.flushPackage(e.Package)
	case e.Action == "output":
		r.running[id] = append(r.running[id], e.Output)
	case e.Action == "pass":
		r.needs(id)
		delete(r.running, id)
	case e.Action == "fail":
		r.flush(id)
	case e.Action == "skip":
		r.needs(id)
		if reason, ok := r.skipReason(id); ok {
			if _, counted := r.skipped[reason]; !counted {
				r.order = append(r.order, reason)
			}
			r.skipped[reason]++
		}
		delete(r.running, id)
	}
}

// needs counts what a test that passed or skipped said was missing (a
// failing test's words are its failure, not a skip).
func (r *report) needs(id testID) {
	for _, line := range r.running[id] {
		m := logLine.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		mm := missingLine.FindStringSubmatch(m[1])
		if mm == nil {
			continue
		}
		n := r.missing[mm[1]]
		if n == nil {
			n = &need{hint: mm[2], tests: map[testID]bool{}}
			r.missing[mm[1]] = n
		}
		n.tests[id] = true
	}
}

// skipReason is what a skipped test said last before "--- SKIP"; false when it
// skipped for something missing (counted as such already).
func (r *report) skipReason(id testID) (string, bool) {
	reason := "no reason given"
	for _, line := range r.running[id] {
		if m := logLine.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			reason = m[1]
		}
	}
	if missingLine.MatchString(reason) {
		return "", false
	}
	return reason, true
}

// flushPackage shows the tests of pkg that have not ended.
func (r *report) flushPackage(pkg string) {
	r.flushWhere(func(id testID) bool { return id.pkg == pkg })
}

func (r *report) flushWhere(match func(testID) bool) {
	var ids []testID
	for id := range r.running {
		if match(id) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].test < ids[j].test })
	for _, id := range ids {
		r.flush(id)
	}
}

// flush prints a failed (or unfinished) test's output as plain go test does:
// its "--- FAIL" line first, then what it said, without verbose mode's
// "=== RUN" lines.
func (r *report) flush(id testID) {
	lines := r.running[id]
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimLeft(lines[i], " "), "--- FAIL") {
			fmt.Fprint(r.w, lines[i])
			lines = append(lines[:i:i], lines[i+1:]...)
			break
		}
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "=== ") {
			fmt.Fprint(r.w, line)
		}
	}
	delete(r.running, id)
}

// summary is the one line of what was skipped and why.
func (r *report) summary() string {
	var parts []string
	names := make([]string, 0, len(r.missing))
	for name := range r.missing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := r.missing[name]
		parts = append(parts, fmt.Sprintf("%s missing in %s (%s)", name, count(len(n.tests), "test"), n.hint))
	}
	total := 0
	for _, n := range r.skipped {
		total += n
	}
	if total > 0 {
		const shown = 3
		var reasons []string
		for i, reason := range r.order {
			if i == shown {
				reasons = append(reasons, fmt.Sprintf("%d more", len(r.order)-shown))
				break
			}
			reasons = append(reasons, fmt.Sprintf("%q", reason))
		}
		parts = append(parts, fmt.Sprintf("%s by design (%s)", count(total, "test"), strings.Join(reasons, ", ")))
	}
	if len(parts) == 0 {
		return "go test skipped nothing"
	}
	return "go test skipped: " + strings.Join(parts, "; ")
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
