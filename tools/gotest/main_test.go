package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it: a package that passes with a skip and
// a partial skip for things missing, a test skipped by design, a failure, a
// build failure, and a test cut short by the package's panic.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestStore"}
{"Action":"output","Package":"ex/a","Test":"TestStore","Output":"=== RUN   TestStore\n"}
{"Action":"output","Package":"ex/a","Test":"TestStore","Output":"    sqldbtest.go:43: missing PostgreSQL: set VITOLA_TEST_DATABASE_URL=postgres://… to run these tests on it too\n"}
{"Action":"output","Package":"ex/a","Test":"TestStore","Output":"--- PASS: TestStore (0.01s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestStore"}
{"Action":"run","Package":"ex/a","Test":"TestOther"}
{"Action":"output","Package":"ex/a","Test":"TestOther","Output":"    sqldbtest.go:43: missing PostgreSQL: set VITOLA_TEST_DATABASE_URL=postgres://… to run these tests on it too\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOther"}
{"Action":"run","Package":"ex/a","Test":"TestRedis"}
{"Action":"output","Package":"ex/a","Test":"TestRedis","Output":"    redis_test.go:24: missing Redis: set VITOLA_TEST_REDIS_URL=redis://127.0.0.1:6379/0 to run these tests\n"}
{"Action":"output","Package":"ex/a","Test":"TestRedis","Output":"--- SKIP: TestRedis (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestRedis"}
{"Action":"run","Package":"ex/a","Test":"TestLarge"}
{"Action":"output","Package":"ex/a","Test":"TestLarge","Output":"    large_test.go:20: missing   25 queries: a table's row, not a marker\n"}
{"Action":"output","Package":"ex/a","Test":"TestLarge","Output":"    large_test.go:29: set VITOLA_BENCH_LARGE=1\n"}
{"Action":"output","Package":"ex/a","Test":"TestLarge","Output":"--- SKIP: TestLarge (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestLarge"}
{"Action":"output","Package":"ex/a","Output":"PASS\n"}
{"Action":"output","Package":"ex/a","Output":"ok  \tex/a\t0.02s\n"}
{"Action":"pass","Package":"ex/a"}
{"Action":"run","Package":"ex/b","Test":"TestBroken"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"    b_test.go:9: got 2, want 3\n"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"    b_test.go:10: missing PKCE: 302\n"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBroken"}
{"Action":"run","Package":"ex/b","Test":"TestHangs"}
{"Action":"output","Package":"ex/b","Test":"TestHangs","Output":"    b_test.go:20: still waiting\n"}
{"Action":"output","Package":"ex/b","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t1.01s\n"}
{"Action":"fail","Package":"ex/b"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-output","Output":"# ex/c [ex/c.test]\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-output","Output":"c.go:2:12: undefined: nope\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-fail"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c"}
not JSON, as it came
`

func TestReport(t *testing.T) {
	var out strings.Builder
	r := newReport(&out)
	r.read(strings.NewReader(stream))
	want := "ok  \tex/a\t0.02s\n" +
		"--- FAIL: TestBroken (0.00s)\n    b_test.go:9: got 2, want 3\n    b_test.go:10: missing PKCE: 302\n" +
		"panic: test timed out after 1s\n" +
		"    b_test.go:20: still waiting\n" +
		"FAIL\tex/b\t1.01s\n" +
		"# ex/c [ex/c.test]\nc.go:2:12: undefined: nope\nFAIL\tex/c [build failed]\n" +
		"not JSON, as it came\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	wantSummary := `go test skipped: PostgreSQL missing in 2 tests (set VITOLA_TEST_DATABASE_URL=postgres://… to run these tests on it too); ` +
		`Redis missing in 1 test (set VITOLA_TEST_REDIS_URL=redis://127.0.0.1:6379/0 to run these tests); 1 test by design ("set VITOLA_BENCH_LARGE=1")`
	if got := r.summary(); got != wantSummary {
		t.Errorf("summary:\n%s\nwant:\n%s", got, wantSummary)
	}
	if got := newReport(&out).summary(); got != "go test skipped nothing" {
		t.Errorf("summary of nothing: %q", got)
	}
}

// TestExitStatus runs the command on a module of its own: go test's exit
// status comes through, and the summary line ends the output.
func TestExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs go test")
	}
	bin := filepath.Join(t.TempDir(), "gotest")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	mod := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module ex\n\ngo 1.26\n")
	write("ex_test.go", `package ex

import (
	"os"
	"testing"
)

func TestPasses(t *testing.T) { t.Log("missing Redis: set VITOLA_TEST_REDIS_URL") }

func TestMayFail(t *testing.T) {
	if os.Getenv("EX_FAIL") == "1" {
		t.Fatal("asked to fail")
	}
}
`)
	for _, tc := range []struct {
		fail string
		code int
		want string
	}{
		{"0", 0, "ok  \tex\t"},
		{"1", 1, "--- FAIL: TestMayFail"},
	} {
		cmd := exec.Command(bin, "-count=1", ".")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "EX_FAIL="+tc.fail, "GOFLAGS=", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if code != tc.code || !strings.Contains(string(out), tc.want) ||
			lines[len(lines)-1] != "go test skipped: Redis missing in 1 test (set VITOLA_TEST_REDIS_URL)" {
			t.Errorf("EX_FAIL=%s: exit %d, want %d; output:\n%s", tc.fail, code, tc.code, out)
		}
	}
}
