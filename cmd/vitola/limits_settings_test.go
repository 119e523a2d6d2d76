package main

import (
	"testing"

	"github.com/vitolahq/vitola/router/limits"
)

// The GraphQL pre-parse bounds are settings: default, environment, flag.
func TestGraphQLBoundSettings(t *testing.T) {
	env := map[string]string{"VITOLA_MAX_NESTING": "32", "VITOLA_MAX_TOKENS": "900"}
	s, err := parseServe([]string{"--max-tokens", "1200", "--max-body-bytes", "4096"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	def := limits.Defaults()
	want := limits.Config{MaxNesting: 32, MaxTokens: 1200, MaxBodyBytes: 4096, MaxQueryBytes: def.MaxQueryBytes,
		MaxDepth: def.MaxDepth, MaxAliases: def.MaxAliases, MaxRootFields: def.MaxRootFields, MaxCost: def.MaxCost}
	if s.Limits != want {
		t.Fatalf("limits = %+v, want %+v", s.Limits, want)
	}
}
