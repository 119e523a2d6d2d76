package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/platform"
)

// pprofWrite is the profiler's write timeout: room for a 60 s profile.
const pprofWrite = 90 * time.Second

// startPprof serves Go's profiler on addr, a listener of its own so that it is
// never reachable through the public API's address; until ctx ends. Empty addr:
// off (the default). It runs within lim like every listener, but gives a
// response pprofWrite: a CPU profile or trace is written after the seconds it
// records (net/http/pprof refuses a longer one, saying so).
func startPprof(ctx context.Context, addr string, lim platform.ServerLimits, log zerolog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	lim.WriteTimeout = max(lim.WriteTimeout, pprofWrite)
	srv := platform.HTTPServer(mux, lim)
	log.Info().Str("addr", "http://"+ln.Addr().String()+"/debug/pprof/").Msg("profiler listening")
	go func() {
		if err := platform.Serve(srv, ln, lim.MaxConnsPerClient); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("profiler")
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return nil
}
