package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/rs/zerolog"
)

// startPprof serves Go's profiler on addr, a listener of its own so that it is
// never reachable through the public API's address; until ctx ends. Empty addr:
// off (the default).
func startPprof(ctx context.Context, addr string, log zerolog.Logger) error {
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
	srv := &http.Server{Handler: mux}
	log.Info().Str("addr", "http://"+ln.Addr().String()+"/debug/pprof/").Msg("profiler listening")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("profiler")
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return nil
}
