//go:build unix

package router_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cosmoTuning is what a Cosmo router under the benchmark turns off.
type cosmoTuning struct {
	noInboundDedup, noSingleFlight bool
}

// startCosmo starts WunderGraph Cosmo's router (the binary at bin, built by
// `make cosmo-router`) over the composition config, its subgraphs routed to
// urls, on a free loopback port, and returns its /graphql URL once it is ready.
// It runs as its documentation shows it run without a control plane: the
// execution config from a file, no graph token, no telemetry (no traces,
// metrics, usage tracking or access logs, as the Vitola routers beside it log
// nothing), its defaults otherwise but for what tuning turns off.
func startCosmo(t *testing.T, bin string, config []byte, urls map[string]string, tuning cosmoTuning) string {
	t.Helper()
	dir := t.TempDir()
	execConfig := filepath.Join(dir, "execution-config.json")
	if err := os.WriteFile(execConfig, config, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(cosmoConfig(addr, execConfig, urls, tuning)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-config", configPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSMO_TELEMETRY_DISABLED=true", "DO_NOT_TRACK=1")
	logs := new(syncBuffer)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start Cosmo's router %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	forget := watchCPU(cmd.Process.Pid, kindCosmo)
	t.Cleanup(func() {
		forget()
		cancel()
		<-exited
	})
	// Ready once its readiness check answers 200 (the graph is loaded).
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return "http://" + addr + "/graphql"
			}
		}
		select {
		case <-exited:
			t.Fatalf("Cosmo's router exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Cosmo's router not ready after 30 s: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cosmoConfig is a Cosmo router config.yaml (router@0.341.0's keys, see its
// pkg/config/config.go). Strings are written as JSON strings, which YAML reads
// as they are.
func cosmoConfig(addr, execConfig string, urls map[string]string, tuning cosmoTuning) string {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, "version: \"1\"\nlisten_addr: %s\nlog_level: error\ndev_mode: false\n", q(addr))
	b.WriteString("graphql_metrics:\n  enabled: false\n")
	b.WriteString("telemetry:\n  tracing:\n    enabled: false\n  metrics:\n    otlp:\n      enabled: false\n    prometheus:\n      enabled: false\n")
	b.WriteString("access_logs:\n  enabled: false\n")
	fmt.Fprintf(&b, "execution_config:\n  file:\n    path: %s\n    watch: false\n", q(execConfig))
	b.WriteString("override_routing_url:\n  subgraphs:\n")
	for name, u := range urls {
		fmt.Fprintf(&b, "    %s: %s\n", q(name), q(u))
	}
	fmt.Fprintf(&b, "engine:\n  enable_inbound_request_deduplication: %t\n  enable_single_flight: %t\n", !tuning.noInboundDedup, !tuning.noSingleFlight)
	return b.String()
}

// freeLoopbackAddr is a loopback address no one listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer keeps a child's output, read while it may still write.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
