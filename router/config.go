package router

import (
	"fmt"
	"maps"
	"slices"

	"github.com/wundergraph/cosmo/router/gen/proto/wg/cosmo/common"
	nodev1 "github.com/wundergraph/cosmo/router/gen/proto/wg/cosmo/node/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Composed is a router configuration made by `wgc router compose`, ready for the
// engine: subgraph URLs overridden from configuration.
type Composed struct {
	// Config holds the full supergraph schema (GraphqlSchema, @inaccessible
	// elements included), which the engine plans over.
	Config *nodev1.RouterConfig
	// Subgraphs maps each subgraph's name to the URL the router calls.
	Subgraphs map[string]string
	// ClientSchema is the public schema: no @inaccessible element, no
	// federation internals. What clients send is validated against it, and
	// introspection shows it; planning uses the full schema.
	ClientSchema string
	// SubgraphSDLs are the subgraphs' own schemas (they carry @cost/@listSize).
	SubgraphSDLs []string
	// separateCallers: some subgraph's fetches carry CallerHeader (SeparateCallers).
	separateCallers bool
}

// LoadComposed reads a wgc router config and overrides subgraph routing URLs by
// subgraph name. Unknown names in overrides are an error: a typo must not leave a
// subgraph pointing at its placeholder URL.
func LoadComposed(raw []byte, overrides map[string]string) (*Composed, error) {
	var rc nodev1.RouterConfig
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &rc); err != nil {
		return nil, fmt.Errorf("router config is not a wgc composition: %w", err)
	}
	ec := rc.GetEngineConfig()
	if ec == nil || ec.GraphqlSchema == "" {
		return nil, fmt.Errorf("router config has no engine configuration")
	}
	c := &Composed{Config: &rc, Subgraphs: map[string]string{}}
	nameByID := map[string]string{}
	for _, sg := range rc.Subgraphs {
		nameByID[sg.Id] = sg.Name
		c.Subgraphs[sg.Name] = sg.RoutingUrl
	}
	for name := range overrides {
		if _, ok := c.Subgraphs[name]; !ok {
			return nil, fmt.Errorf("no subgraph named %q in the router config (it has: %v)", name, slices.Sorted(maps.Keys(c.Subgraphs)))
		}
	}
	for _, ds := range ec.DatasourceConfigurations {
		name := nameByID[ds.Id]
		if url, ok := overrides[name]; ok {
			c.Subgraphs[name] = url
			ds.CustomGraphql.Fetch.Url = &nodev1.ConfigurationVariable{
				Kind:                  nodev1.ConfigurationVariableKind_STATIC_CONFIGURATION_VARIABLE,
				StaticVariableContent: url,
			}
			// A subgraph's subscriptions go to the same endpoint (wgc writes
			// the routing URL there unless graph.yaml names another).
			if sub := ds.CustomGraphql.Subscription; sub != nil {
				sub.Url = ds.CustomGraphql.Fetch.Url
			}
		}
		if err := sseSubscriptions(name, ds); err != nil {
			return nil, err
		}
		if key := ds.GetCustomGraphql().GetUpstreamSchema().GetKey(); key != "" {
			c.SubgraphSDLs = append(c.SubgraphSDLs, ec.StringStorage[key])
		}
	}
	// wgc leaves the client schema out when nothing is inaccessible: the full
	// schema is then the client's too.
	c.ClientSchema = ec.GetGraphqlClientSchema()
	if c.ClientSchema == "" {
		c.ClientSchema = ec.GraphqlSchema
	}
	return c, nil
}

// sseSubscriptions refuses a subgraph with subscriptions that it would
// stream to the router over anything but SSE: the router answers a client
// once its upstream SSE response has arrived (signalUpstream), which a
// WebSocket upstream, shared by many subscriptions, never signals.
func sseSubscriptions(name string, ds *nodev1.DataSourceConfiguration) error {
	subscribes := slices.ContainsFunc(ds.RootNodes, func(n *nodev1.TypeField) bool { return n.TypeName == "Subscription" })
	if !subscribes {
		return nil
	}
	switch p := ds.GetCustomGraphql().GetSubscription().GetProtocol(); p {
	case common.GraphQLSubscriptionProtocol_GRAPHQL_SUBSCRIPTION_PROTOCOL_SSE_POST, common.GraphQLSubscriptionProtocol_GRAPHQL_SUBSCRIPTION_PROTOCOL_SSE:
		return nil
	default:
		return fmt.Errorf("subgraph %s streams its subscriptions over %s: the router needs SSE (graph.yaml: subscription protocol sse_post)", name, p)
	}
}

// CallerHeader carries a digest of the caller's identity on every fetch to a
// subgraph that SeparateCallers names. The engine merges identical in-flight
// fetches, keyed on the fetch's rendered input; with the caller in that input,
// a fetch made for one caller never answers another's request.
const CallerHeader = "X-Vitola-Caller"

// SeparateCallers makes the named subgraphs' fetches carry CallerHeader, so that
// deduplication stays within one caller. Use it for every subgraph that sees
// the caller's identity.
func (c *Composed) SeparateCallers(subgraphs ...string) {
	ids := map[string]bool{}
	for _, sg := range c.Config.Subgraphs {
		if slices.Contains(subgraphs, sg.Name) {
			ids[sg.Id] = true
		}
	}
	for _, ds := range c.Config.EngineConfig.DatasourceConfigurations {
		if !ids[ds.Id] {
			continue
		}
		c.separateCallers = true
		fetch := ds.CustomGraphql.Fetch
		if fetch.Header == nil {
			fetch.Header = map[string]*nodev1.HTTPHeader{}
		}
		fetch.Header[CallerHeader] = &nodev1.HTTPHeader{Values: []*nodev1.ConfigurationVariable{{
			Kind:                  nodev1.ConfigurationVariableKind_STATIC_CONFIGURATION_VARIABLE,
			StaticVariableContent: "{{ .request.headers." + CallerHeader + " }}",
		}}}
	}
}
