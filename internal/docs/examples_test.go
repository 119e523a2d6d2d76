package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExamples runs every fenced `sh` block of README.md and of the pages the
// table of contents (docs/README.md) lists, in that order, as a reader would
// paste them: one bash session per page (so a variable set in one block is
// there in the next), in a folder laid out like a clone of the repository
// (its files linked in, ./bin/vitola built from this tree, ./data the
// server's), against a server started as `make run` starts it:
// `./bin/vitola serve --demo --data ./data`.
//
// What the test changes, and only in the text it runs: every loopback port
// a page names (localhost:8080, 127.0.0.1:8099, …) becomes a free port of
// this machine, the same one for the same port everywhere, so that the test
// never meets a server of yours; and VITOLA_ADDR says the server's address
// to the admin commands, which mint tokens for it. The server is started with the settings
// pages start it with: metrics on the port the metrics page names, and
// image fetches from loopback allowed (the payments walk-through).
//
// A block is checked by its exit status (bash -e -o pipefail) and by each of
// its lines `# prints: TEXT`: what the block printed must contain TEXT,
// where … stands for anything. A block that cannot run here (it starts the
// server itself, needs a browser or Docker) is preceded by
// <!-- docs-test: skip "NAME": REASON --> and is listed by name as skipped.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("by design: -short leaves out the docs examples (they start a server)")
	}
	files := append([]string{"README.md"}, tocPages(t)...)
	var pages []page
	ports := map[string]string{}
	for _, f := range files {
		p := readPage(t, f)
		pages = append(pages, p)
		for _, b := range p.blocks {
			for _, m := range loopbackPort.FindAllStringSubmatch(b.text, -1) {
				ports[m[2]] = ""
			}
		}
	}
	for port := range ports {
		ports[port] = freePort(t)
	}
	for i := range pages {
		for j := range pages[i].blocks {
			b := &pages[i].blocks[j]
			b.text = rewritePorts(b.text, ports)
			for k := range b.wantPrints {
				b.wantPrints[k] = rewritePorts(b.wantPrints[k], ports)
			}
		}
	}

	work := workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	startServer(t, ctx, work, ports)

	// Admin commands derive the public URL they mint tokens for from
	// VITOLA_ADDR, as the server does: the same address, as with make run.
	env := append(cleanEnv(), "VITOLA_ADDR=127.0.0.1:"+ports["8080"], "VITOLA_PAYMENTS_ADDR=127.0.0.1:"+ports["8081"])
	var skipped []string
	for _, p := range pages {
		t.Run(p.file, func(t *testing.T) {
			skipped = append(skipped, runPage(t, ctx, work, env, p)...)
		})
	}
	t.Logf("skipped by name: %s", strings.Join(skipped, "; "))
}

// block is one fenced sh block of a page.
type block struct {
	line       int    // the line of its opening fence
	text       string // what is run
	skip       string // "NAME: REASON" when it is not run
	wantPrints []string
}

type page struct {
	file   string
	blocks []block
}

var (
	skipMark     = regexp.MustCompile(`^<!-- docs-test: skip "([^"]+)": (.+?) -->$`)
	printsLine   = regexp.MustCompile(`(?m)^\s*# prints: (.+)$`)
	loopbackPort = regexp.MustCompile(`(localhost|127\.0\.0\.1):([0-9]{4,5})\b`)
	tocLink      = regexp.MustCompile(`\]\(([a-z-]+/[a-z-]+\.md)\)`)
)

// tocPages lists the pages docs/README.md links, in its order.
func tocPages(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range tocLink.FindAllStringSubmatch(string(b), -1) {
		if f := "docs/" + m[1]; !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return append([]string{"docs/README.md"}, out...)
}

// readPage finds a page's sh blocks, each with its skip mark and the output
// it promises.
func readPage(t *testing.T, file string) page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	p := page{file: file}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		bl := block{line: i + 1}
		if i > 0 {
			if m := skipMark.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				bl.skip = m[1] + ": " + m[2]
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		bl.text = strings.Join(body, "\n")
		for _, m := range printsLine.FindAllStringSubmatch(bl.text, -1) {
			bl.wantPrints = append(bl.wantPrints, strings.TrimSpace(m[1]))
		}
		p.blocks = append(p.blocks, bl)
	}
	return p
}

func rewritePorts(text string, ports map[string]string) string {
	return loopbackPort.ReplaceAllStringFunc(text, func(s string) string {
		m := loopbackPort.FindStringSubmatch(s)
		return m[1] + ":" + ports[m[2]]
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// workspace is a folder laid out like a clone: every entry of the repository
// linked in but bin and data, which are its own.
func workspace(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "bin", "data", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "vitola"), "./cmd/vitola")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building vitola: %v\n%s", err, out)
	}
	return work
}

// startServer runs ./bin/vitola serve --demo --data ./data as make run does,
// on the ports the pages' 8080 and 8081 became, until the test ends.
func startServer(t *testing.T, ctx context.Context, work string, ports map[string]string) {
	t.Helper()
	api, pay := ports["8080"], ports["8081"]
	if api == "" || pay == "" {
		t.Fatal("no page names localhost:8080 and 127.0.0.1:8081: where would the server listen?")
	}
	args := []string{"serve", "--demo", "--data", "./data", "--addr", "127.0.0.1:" + api, "--payments-addr", "127.0.0.1:" + pay,
		"--fetch-allow-cidrs", "127.0.0.1/32"}
	if m := ports["9090"]; m != "" {
		args = append(args, "--metrics-addr", "127.0.0.1:"+m)
	}
	srv := exec.CommandContext(ctx, filepath.Join(work, "bin", "vitola"), args...)
	srv.Dir = work
	srv.Env = cleanEnv()
	var log bytes.Buffer
	srv.Stdout, srv.Stderr = &log, &log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", tail(log.String(), 40))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get("http://127.0.0.1:" + api + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not answer /health within 2 minutes:\n%s", tail(log.String(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cleanEnv is the test's environment without the settings a developer's
// shell may hold, so that the server and the examples see make run's
// defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "VITOLA_") || strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "REDIS_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runPage runs a page's blocks in one bash session and checks each; it
// returns the names of the blocks it skipped.
func runPage(t *testing.T, ctx context.Context, work string, env []string, p page) []string {
	var script strings.Builder
	script.WriteString("set -eo pipefail\ntrap 'printf \"\\n@@failed %s\\n\" \"$__docs_block\"' ERR\n")
	var skipped []string
	run := map[int]block{}
	for i, b := range p.blocks {
		if b.skip != "" {
			skipped = append(skipped, fmt.Sprintf("%s:%d %s", p.file, b.line, b.skip))
			continue
		}
		run[i] = b
		fmt.Fprintf(&script, "__docs_block=%d\nprintf '\\n@@begin %d\\n'\n%s\nprintf '\\n@@end %d\\n'\n", i, i, b.text, i)
	}
	if len(run) == 0 {
		return skipped
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	sh.Dir = work
	sh.Env = env
	sh.Stdin = strings.NewReader(script.String())
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The page's background jobs (a receiver, a file server) go with it.
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe: a background job the page started holds its
	// output open after bash has exited, and Run would wait for it.
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sh.Stdout, sh.Stderr = out, out
	err = sh.Run()
	if sh.Process != nil {
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	}
	printed, readErr := os.ReadFile(out.Name())
	if readErr != nil {
		t.Fatal(readErr)
	}
	outputs, ended, failed := splitOutput(string(printed))
	for _, i := range sortedKeys(run) {
		b := run[i]
		where := fmt.Sprintf("%s:%d", p.file, b.line)
		switch {
		case failed == i:
			t.Errorf("%s: the block failed:\n%s\n--- it printed:\n%s", where, b.text, tail(outputs[i], 30))
			return skipped
		case !ended[i]:
			t.Errorf("%s: the block did not finish (%v):\n%s\n--- it printed:\n%s", where, err, b.text, tail(outputs[i], 30))
			return skipped
		}
		for _, want := range b.wantPrints {
			if !promised(want).MatchString(outputs[i]) {
				t.Errorf("%s: the block promises it prints %q; it printed:\n%s", where, want, tail(outputs[i], 30))
			}
		}
	}
	return skipped
}

// splitOutput cuts a session's output into each block's, and tells which
// blocks ended and which one failed (-1: none).
func splitOutput(s string) (outputs map[int]string, ended map[int]bool, failed int) {
	outputs, ended, failed = map[int]string{}, map[int]bool{}, -1
	cur := -1
	var buf strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var n int
		switch {
		case scanMarker(line, "@@begin ", &n):
			cur = n
			buf.Reset()
		case scanMarker(line, "@@end ", &n):
			outputs[n] = buf.String()
			ended[n] = true
			cur = -1
		case scanMarker(line, "@@failed ", &n):
			outputs[n] = buf.String()
			failed = n
		case cur >= 0:
			buf.WriteString(line + "\n")
		}
	}
	if cur >= 0 && outputs[cur] == "" {
		outputs[cur] = buf.String()
	}
	return outputs, ended, failed
}

func scanMarker(line, prefix string, n *int) bool {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return false
	}
	v, err := strconv.Atoi(rest)
	*n = v
	return err == nil
}

// promised makes a `# prints:` text a pattern: … stands for anything.
func promised(text string) *regexp.Regexp {
	parts := strings.Split(text, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(strings.Join(parts, ".*?"))
}

func sortedKeys(m map[int]block) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// The parts of the runner whose answers are known.
func TestExampleRunnerParts(t *testing.T) {
	dir := t.TempDir()
	page := "Intro\n\n```sh\nX=1\necho \"x is $X\"\n# prints: x is …\n```\n\n<!-- docs-test: skip \"server\": starts the server -->\n```sh\nmake run\n```\n\n```go\nfmt.Println()\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "p.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(abs, filepath.Join(dir, "p.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := readPage(t, rel)
	if len(p.blocks) != 2 {
		t.Fatalf("found %d sh blocks, want 2", len(p.blocks))
	}
	if p.blocks[0].skip != "" || p.blocks[1].skip != "server: starts the server" {
		t.Errorf("skips = %q, %q", p.blocks[0].skip, p.blocks[1].skip)
	}
	if got := p.blocks[0].wantPrints; len(got) != 1 || got[0] != "x is …" {
		t.Errorf("prints = %q", got)
	}
	if !promised("x is …").MatchString("x is 1\n") || promised(`{"a":1}`).MatchString(`{"a":2}`) {
		t.Error("promised patterns do not match as they should")
	}
	ports := map[string]string{"8080": "40001", "8099": "40002"}
	if got := rewritePorts("curl localhost:8080/x http://127.0.0.1:8099/paid :80", ports); got != "curl localhost:40001/x http://127.0.0.1:40002/paid :80" {
		t.Errorf("rewritePorts = %q", got)
	}
	out, ended, failed := splitOutput("\n@@begin 0\nhello\n\n@@end 0\n\n@@begin 2\noops\n\n@@failed 2\n")
	if out[0] != "hello\n\n" || !ended[0] || ended[2] || failed != 2 || out[2] != "oops\n\n" {
		t.Errorf("splitOutput = %v %v %d", out, ended, failed)
	}
}
