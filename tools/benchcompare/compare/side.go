package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// side is one build of vitola, driven only through its command line and its
// HTTP API (what every version has), with its own data and servers.
type side struct {
	name  string // "old" or "new"
	label string // what was built: the commit, or the working tree
	bin   string
	dir   string // its data directories and server logs
	out   io.Writer

	serveHelp string // `vitola serve -h`: the flags this build has
	small     *server
	big       *server
	smallKey  string // a developer key with api.ai on the small server
	// smallKeyNote says why smallKey lacks api.ai (the build could not grant it).
	smallKeyNote string
	bigKey       string

	// cannot says, per benchmark, why it cannot run on this side (a route or
	// command missing, a setup step that failed).
	cannot map[string]string
}

// benchSettings are serve flags every server of the comparison gets when
// its build has them: all the load comes from one developer key, which the
// default quotas (50 requests a second) would refuse; "off" skips the quota
// check on both sides alike.
var benchSettings = [][2]string{{"quota-mode", "off"}}

// childEnv is the environment of vitola's processes: this one's, without the
// settings that would change what is measured (a DATABASE_URL, REDIS_URL or
// VITOLA_* of the caller's shell), so both sides run the embedded default
// with the flags given here.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VITOLA_") || name == "DATABASE_URL" || name == "REDIS_URL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// command is `vitola ARGS...` of this side.
func (s *side) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = childEnv()
	return cmd
}

// cli runs an admin command and returns its last line of standard output,
// where every version's admin commands print their result.
func (s *side) cli(ctx context.Context, args ...string) (string, error) {
	cmd := s.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: vitola %s: %w: %s", s.name, strings.Join(redactArgs(args), " "), err, clip(stderr.String(), 300))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// redactArgs hides the values of flags that take secrets, for messages.
func redactArgs(args []string) []string {
	secret := func(flag string) bool {
		f := strings.TrimLeft(flag, "-")
		return f == "key" || f == "internal-key" || f == "database-url" || f == "redis-url"
	}
	out := append([]string{}, args...)
	for i, a := range out {
		if name, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") && secret(name) {
			out[i] = name + "=…"
		} else if i > 0 && strings.HasPrefix(out[i-1], "-") && !strings.Contains(out[i-1], "=") && secret(out[i-1]) {
			out[i] = "…"
		}
	}
	return out
}

// has reports whether this build has the command (words and all): its -h
// succeeds only then.
func (s *side) has(ctx context.Context, words ...string) bool {
	cmd := s.command(ctx, append(words, "-h")...)
	return cmd.Run() == nil
}

// serveFlags are the bench settings this build's serve takes.
func (s *side) serveFlags() []string {
	var args []string
	for _, f := range benchSettings {
		if strings.Contains(s.serveHelp, "-"+f[0]+" ") || strings.Contains(s.serveHelp, "-"+f[0]+"\n") {
			args = append(args, "--"+f[0], f[1])
		}
	}
	return args
}

// server is one `vitola serve` of a side.
type server struct {
	name     string
	cmd      *exec.Cmd
	api, pay string // base URLs of the public API and the payments origin
	log      string // its standard output and error
	done     chan struct{}
	waitErr  error
}

// startServer runs `vitola serve` on free loopback ports and waits until
// both origins answer /health. A port another program took meanwhile makes
// it try new ones.
func (s *side) startServer(ctx context.Context, name, data string, extra ...string) (*server, error) {
	var lastErr error
	for range 3 {
		sv, err := s.tryServer(ctx, name, data, extra...)
		if err == nil {
			return sv, nil
		}
		lastErr = err
		if !errors.Is(err, errExited) || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

var errExited = errors.New("vitola serve exited")

func (s *side) tryServer(ctx context.Context, name, data string, extra ...string) (*server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	sv := &server{name: s.name + " " + name, api: "http://" + ports[0], pay: "http://" + ports[1],
		log: filepath.Join(s.dir, name+"-serve.log"), done: make(chan struct{})}
	logFile, err := os.OpenFile(sv.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data", data, "--addr", ports[0], "--payments-addr", ports[1]}, s.serveFlags()...)
	// Not CommandContext: stop ends it gracefully, whatever ended ctx.
	sv.cmd = exec.Command(s.bin, append(args, extra...)...)
	sv.cmd.Env = childEnv()
	sv.cmd.Stdout, sv.cmd.Stderr = logFile, logFile
	if err := sv.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: start vitola serve: %w", sv.name, err)
	}
	go func() {
		sv.waitErr = sv.cmd.Wait()
		logFile.Close()
		close(sv.done)
	}()
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(5 * time.Minute) // a large catalog is read and indexed first
	for _, u := range []string{sv.api + "/health", sv.pay + "/health"} {
		for {
			res, err := c.Get(u)
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-sv.done:
				return nil, fmt.Errorf("%s: %w (%v) before it answered /health: %s", sv.name, errExited, sv.waitErr, logTail(sv.log))
			case <-ctx.Done():
				sv.stop()
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				sv.stop()
				return nil, fmt.Errorf("%s: no answer on %s within 5 minutes: %s", sv.name, u, logTail(sv.log))
			}
		}
	}
	return sv, nil
}

// stop ends the server gracefully (SIGTERM), killing it if it has not
// exited within 15 seconds.
func (sv *server) stop() {
	if sv == nil || sv.cmd.Process == nil {
		return
	}
	select {
	case <-sv.done:
		return
	default:
	}
	sv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-sv.done:
	case <-time.After(15 * time.Second):
		sv.cmd.Process.Kill()
		<-sv.done
	}
}

// cpu is the CPU the server has used so far.
func (sv *server) cpu() (time.Duration, error) {
	select {
	case <-sv.done:
		return 0, fmt.Errorf("%s: %w (%v): %s", sv.name, errExited, sv.waitErr, logTail(sv.log))
	default:
	}
	return processCPU(sv.cmd.Process.Pid)
}

// freePorts finds n loopback addresses free now.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// logTail is the end of a server's log, for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return "the end of " + path + ":\n" + s
}

// tailWriter keeps the last bytes written to it (a long command's output),
// for progress lines and errors.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 8 << 10

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > tailMax {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// lastLine is the last complete or partial line written.
func (w *tailWriter) lastLine() string {
	s := strings.TrimRight(w.String(), "\r\n")
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// runLong runs cmd, saying what it does, then every 10 seconds how long it
// has run and its latest line of output, then how long it took. Its output
// is kept (the end of it) for an error.
func runLong(out io.Writer, what string, cmd *exec.Cmd) (time.Duration, error) {
	fmt.Fprintf(out, "%s…\n", what)
	var tail tailWriter
	if cmd.Stdout == nil {
		cmd.Stdout = &tail
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &tail
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			took := time.Since(start)
			if err != nil {
				return took, fmt.Errorf("%s: %w\n%s", what, err, clip(tail.String(), 3000))
			}
			fmt.Fprintf(out, "%s: done in %s\n", what, took.Round(100*time.Millisecond))
			return took, nil
		case <-tick.C:
			line := ""
			if l := clip(tail.lastLine(), 100); l != "" {
				line = " (" + l + ")"
			}
			fmt.Fprintf(out, "  … %s so far%s\n", time.Since(start).Round(time.Second), line)
		}
	}
}
