package main

import (
	"testing"

	"github.com/vitolahq/vitola/router"
)

// The router's deduplication, operation cache, h2c and profiler settings:
// default, environment, flag (a flag wins over the environment).
func TestRouterTuningSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     router.Tuning
		h2c      bool
		pprofArg string
	}{
		{name: "defaults", want: router.Tuning{OperationCacheSize: router.DefaultOperationCacheSize}},
		{name: "environment", env: map[string]string{"VITOLA_INBOUND_DEDUP": "false", "VITOLA_SINGLE_FLIGHT": "0", "VITOLA_OPERATION_CACHE_SIZE": "64", "VITOLA_SUBGRAPH_H2C": "true", "VITOLA_PPROF_ADDR": "127.0.0.1:6060"},
			want: router.Tuning{NoInboundDedup: true, NoSingleFlight: true, OperationCacheSize: 64}, h2c: true, pprofArg: "127.0.0.1:6060"},
		{name: "flags over environment", args: []string{"--inbound-dedup=true", "--single-flight=false", "--operation-cache-size", "8"},
			env:  map[string]string{"VITOLA_INBOUND_DEDUP": "false", "VITOLA_OPERATION_CACHE_SIZE": "64"},
			want: router.Tuning{NoSingleFlight: true, OperationCacheSize: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseServe(tc.args, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if s.Tuning != tc.want || s.SubgraphH2C != tc.h2c || s.PprofAddr != tc.pprofArg {
				t.Fatalf("tuning %+v h2c %v pprof %q, want %+v %v %q", s.Tuning, s.SubgraphH2C, s.PprofAddr, tc.want, tc.h2c, tc.pprofArg)
			}
		})
	}
}
