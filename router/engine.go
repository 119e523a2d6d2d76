package router

import (
	"context"
	"fmt"
	"net/http"

	nodev1 "github.com/wundergraph/cosmo/router/gen/proto/wg/cosmo/node/v1"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/datasource/graphql_datasource"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/engine/plan"
)

// withFederationMetadata rebuilds the engine's subgraph data sources with all
// the federation metadata of the composition. The execution package's factory
// (graphql-go-tools/execution v1.17) copies keys, @requires and @provides but
// drops three things the planner needs:
//   - a key's `resolvable: false` (DisableEntityResolver): without it the
//     planner may enter a subgraph through a key that subgraph cannot resolve,
//     and the entity comes back null;
//   - each type's external fields (ExternalFieldNames): without them the
//     planner takes an @external field for one the subgraph resolves, which
//     breaks @provides and keys made of external fields;
//   - a key's conditions (the paths under which an implicit key, provided by
//     @provides, is available).
//
// The data sources keep the factory's fetch configuration (URL, headers,
// upstream schema); only their metadata is made anew.
func withFederationMetadata(ctx context.Context, client *http.Client, rc *nodev1.RouterConfig, built []plan.DataSource) ([]plan.DataSource, error) {
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	streaming := *client
	streaming.Transport = signalUpstream{base}
	sub := graphql_datasource.NewGraphQLSubscriptionClient(ctx,
		graphql_datasource.WithUpgradeClient(client), graphql_datasource.WithStreamingClient(&streaming))
	factory, err := graphql_datasource.NewFactory(ctx, client, sub)
	if err != nil {
		return nil, err
	}
	configs := map[string]*nodev1.DataSourceConfiguration{}
	for _, ds := range rc.GetEngineConfig().GetDatasourceConfigurations() {
		configs[ds.Id] = ds
	}
	out := make([]plan.DataSource, 0, len(built))
	for _, ds := range built {
		gql, ok := ds.(plan.DataSourceConfiguration[graphql_datasource.Configuration])
		in := configs[ds.Id()]
		if !ok || in == nil {
			out = append(out, ds)
			continue
		}
		rebuilt, err := plan.NewDataSourceConfigurationWithName(ds.Id(), ds.Name(), factory, dataSourceMetadata(in), gql.CustomConfiguration())
		if err != nil {
			return nil, fmt.Errorf("data source %s: %w", ds.Id(), err)
		}
		out = append(out, rebuilt)
	}
	return out, nil
}

// dataSourceMetadata is the planner's view of one subgraph in the composition.
func dataSourceMetadata(in *nodev1.DataSourceConfiguration) *plan.DataSourceMetadata {
	directives := make(plan.DirectiveConfigurations, 0, len(in.Directives))
	for _, d := range in.Directives {
		directives = append(directives, plan.DirectiveConfiguration{DirectiveName: d.DirectiveName, RenameTo: d.DirectiveName})
	}
	return &plan.DataSourceMetadata{
		RootNodes:  typeFields(in.RootNodes),
		ChildNodes: typeFields(in.ChildNodes),
		Directives: &directives,
		FederationMetaData: plan.FederationMetaData{
			Keys:             fieldSets(in.Keys),
			Requires:         fieldSets(in.Requires),
			Provides:         fieldSets(in.Provides),
			EntityInterfaces: interfaces(in.EntityInterfaces),
			InterfaceObjects: interfaces(in.InterfaceObjects),
		},
	}
}

func typeFields(in []*nodev1.TypeField) plan.TypeFields {
	out := make(plan.TypeFields, 0, len(in))
	for _, n := range in {
		out = append(out, plan.TypeField{
			TypeName:           n.TypeName,
			FieldNames:         n.FieldNames,
			ExternalFieldNames: n.ExternalFieldNames,
			FetchReasonFields:  n.RequireFetchReasonsFieldNames,
		})
	}
	return out
}

func fieldSets(in []*nodev1.RequiredField) plan.FederationFieldConfigurations {
	out := make(plan.FederationFieldConfigurations, 0, len(in))
	for _, f := range in {
		c := plan.FederationFieldConfiguration{
			TypeName:              f.TypeName,
			FieldName:             f.FieldName,
			SelectionSet:          f.SelectionSet,
			DisableEntityResolver: f.DisableEntityResolver,
		}
		for _, cond := range f.Conditions {
			kc := plan.KeyCondition{FieldPath: cond.FieldPath}
			for _, fc := range cond.FieldCoordinatesPath {
				kc.Coordinates = append(kc.Coordinates, plan.FieldCoordinate{TypeName: fc.TypeName, FieldName: fc.FieldName})
			}
			c.Conditions = append(c.Conditions, kc)
		}
		out = append(out, c)
	}
	return out
}

func interfaces(in []*nodev1.EntityInterfaceConfiguration) []plan.EntityInterfaceConfiguration {
	out := make([]plan.EntityInterfaceConfiguration, 0, len(in))
	for _, c := range in {
		out = append(out, plan.EntityInterfaceConfiguration{InterfaceTypeName: c.InterfaceTypeName, ConcreteTypeNames: c.ConcreteTypeNames})
	}
	return out
}
