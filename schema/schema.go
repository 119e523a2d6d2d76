// Package schema embeds the graph's source of truth: each subgraph's SDL (gqlgen
// generates from them), the router configuration wgc composed from them
// (generated: `make compose`), and the OpenAPI document of every REST route.
package schema

import _ "embed"

// RouterConfig is wgc's composition of graph.yaml. Generated; do not edit.
//
//go:embed router-config.json
var RouterConfig []byte

// OpenAPI describes every REST route (served at /docs/openapi.yaml).
//
//go:embed openapi.yaml
var OpenAPI []byte

// Subgraph names, as in graph.yaml.
const (
	Catalog = "catalog"
	Users   = "users"
	Venues  = "venues"
)

// Subgraphs lists the subgraphs composed into the public graph.
var Subgraphs = []string{Catalog, Users, Venues}
