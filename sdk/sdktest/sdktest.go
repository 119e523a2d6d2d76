// Package sdktest lets Go tests drive the TypeScript SDK's Node tooling (vitest,
// playwright-core) against a real server. `make test` installs the pinned npm
// packages first; without them a test skips with a hint, or fails under
// VITOLA_TEST_REQUIRE_SERVICES=1 (CI).
package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Dir is the SDK's folder (sdk/ at the repository's root).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Require skips (or, in CI, fails) t unless the SDK's npm packages are installed
// and every named program (e.g. "chromium") is on PATH.
func Require(t testing.TB, programs ...string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is missing: run `make test`, which installs it", what)
		}
		t.Skipf("missing %s: `make test` installs it", what)
	}
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules", ".vitola-installed")); err != nil {
		missing("the SDK's npm packages (sdk/node_modules)")
	}
	for _, p := range append([]string{"node"}, programs...) {
		if _, err := exec.LookPath(p); err != nil {
			missing(p)
		}
	}
}

// Run runs a command in the SDK's folder with env added to the environment,
// and fails t with its output when it fails.
func Run(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = Dir()
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
	}
	return out.String()
}

// RunBrowser runs a browser script of test/browser (it drives chromium with
// playwright-core, see test/browser/chromium.mjs) with env added, and decodes
// the JSON line it prints last into out. Call Require(t, "chromium") first.
func RunBrowser(t testing.TB, script string, env []string, out any) {
	t.Helper()
	RunScript(t, filepath.Join("test", "browser", script), env, out)
}

// RunScript runs a Node script (a path in the SDK's folder) with env added, and
// decodes the JSON line it prints last into out.
func RunScript(t testing.TB, script string, env []string, out any) {
	t.Helper()
	text := strings.TrimSpace(Run(t, env, "node", script))
	last := text[strings.LastIndexByte(text, '\n')+1:]
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("%s printed no JSON result (%v):\n%s", script, err, text)
	}
}
