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

// PaymentsOpenAPI describes the payments origin's routes (served at its /docs).
//
//go:embed payments-openapi.yaml
var PaymentsOpenAPI []byte

// Subgraph names, as in graph.yaml.
const (
	Catalog = "catalog"
	Users   = "users"
	Venues  = "venues"
)

// Internal subgraphs: credits (and, later, payments), and image matching.
const (
	Payments = "payments"
	Matching = "matching"
)

// Subgraphs lists the subgraphs composed into the public graph.
var Subgraphs = []string{Catalog, Users, Venues}

// Internal lists the subgraphs that only the shim calls: they are never composed
// into the public graph, so no public query reaches them.
var Internal = []string{Payments, Matching}

// All lists every subgraph, composed or internal.
var All = append(append([]string{}, Subgraphs...), Internal...)
