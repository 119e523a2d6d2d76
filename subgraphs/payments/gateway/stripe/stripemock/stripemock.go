// Package stripemock runs stripe-mock (github.com/stripe/stripe-mock, the
// version pinned in the Makefile, which `make test` installs into
// .cache/tools/bin) as a real process on loopback for tests.
//
// stripe-mock checks every request against Stripe's OpenAPI document (an
// unknown or ill-typed parameter is a 400) and answers fixtures; it keeps no
// state. Its bundled fixtures leave setup and payment intents in
// requires_payment_method, so Start serves fixtures.json instead: the
// bundled customer, payment_method, setup_intent and payment_intent of
// v0.203.0 (embedded/openapi/fixtures3.json), with both intents succeeded.
package stripemock

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed fixtures.json
var fixtures []byte

// Binary is where stripe-mock is: $VITOLA_STRIPE_MOCK, else
// .cache/tools/bin/stripe-mock at the root of the module holding the working
// directory (a test's package).
func Binary() string {
	if p := os.Getenv("VITOLA_STRIPE_MOCK"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".cache", "tools", "bin", "stripe-mock")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Start runs stripe-mock on free loopback ports, waits until it answers and
// returns its API base URL (http://127.0.0.1:PORT); the test's cleanup stops
// it. Without the binary the test is skipped, or fails when
// VITOLA_TEST_REQUIRE_SERVICES=1 (CI).
func Start(t testing.TB) string {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); bin == "" || err != nil {
		msg := fmt.Sprintf("stripe-mock is not installed at %q; `make tools` installs it (or `go install github.com/stripe/stripe-mock@v0.203.0` and set VITOLA_STRIPE_MOCK)", bin)
		if os.Getenv("VITOLA_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("VITOLA_TEST_REQUIRE_SERVICES=1: " + msg)
		}
		t.Skip("missing stripe-mock: " + msg)
	}
	fx := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(fx, fixtures, 0o600); err != nil {
		t.Fatal(err)
	}
	// Both listeners on loopback and port 0: by default stripe-mock also
	// serves HTTPS on every interface at 12112.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0", "-fixtures", fx)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	var (
		mu  sync.Mutex
		log []string
	)
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Keep reading: stripe-mock prints a line per request, and a full
		// pipe would stall it.
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log = append(log, line)
			mu.Unlock()
			if a, ok := strings.CutPrefix(line, "Listening for HTTP at address: "); ok {
				addr <- strings.TrimSpace(a)
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
		if t.Failed() {
			mu.Lock()
			t.Logf("stripe-mock's output:\n%s", strings.Join(log, "\n"))
			mu.Unlock()
		}
	})
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-done:
		t.Fatal("stripe-mock exited before listening")
	case <-time.After(60 * time.Second):
		t.Fatal("stripe-mock did not listen within 60 s")
	}
	if err := waitAnswer(base, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return base
}

// waitAnswer polls until stripe-mock answers a request as the API would.
func waitAnswer(base string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/customers/cus_probe", nil)
		req.Header.Set("Authorization", "Bearer sk_test_probe")
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(res.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stripe-mock at %s does not answer: %v", base, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
