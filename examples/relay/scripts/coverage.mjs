// Writes src/Coverage.ts: a pagination fragment (@connection, both directions,
// @refetchable) for every connection of schema.graphql and a @refetchable
// fragment for every Node type, so that relay-compiler checks the whole graph,
// not only the fields the example app uses. A connection is a field whose type
// has edges and pageInfo.
//
//   node scripts/coverage.mjs [schema.graphql] [out]
import { readFileSync, writeFileSync } from 'node:fs';
import { buildSchema, getNamedType, isInterfaceType, isNonNullType, isObjectType } from 'graphql';

const schema = buildSchema(readFileSync(process.argv[2] ?? 'schema.graphql', 'utf8'));
const out = process.argv[3] ?? 'src/Coverage.ts';
const node = schema.getType('Node');
const paging = new Set(['first', 'after', 'last', 'before']);
const fragments = [];
let connections = 0;
for (const type of Object.values(schema.getTypeMap())) {
  if (!isObjectType(type) || type.name.startsWith('__')) continue;
  // A fragment can be refetched on Query and on Node types only.
  const refetchable = type === schema.getQueryType() || (isInterfaceType(node) && type.getInterfaces().includes(node));
  if (refetchable && type !== schema.getQueryType()) {
    fragments.push(`fragment Coverage_${type.name} on ${type.name} @refetchable(queryName: "Coverage${type.name}RefetchQuery") { id }`);
  }
  for (const field of Object.values(type.getFields())) {
    const target = getNamedType(field.type);
    if (!isObjectType(target) || !target.getFields().edges || !target.getFields().pageInfo) continue;
    if (!refetchable) {
      console.error(`${type.name}.${field.name}: a connection on a type that is neither Query nor a Node cannot be paginated by Relay`);
      process.exit(1);
    }
    connections++;
    const defs = ['first: { type: "Int", defaultValue: 2 }', 'after: { type: "String" }', 'last: { type: "Int" }', 'before: { type: "String" }'];
    const args = ['first: $first', 'after: $after', 'last: $last', 'before: $before'];
    for (const a of field.args) {
      if (paging.has(a.name) || !isNonNullType(a.type)) continue;
      defs.push(`${a.name}: { type: "${a.type}" }`);
      args.push(`${a.name}: $${a.name}`);
    }
    const name = `${type.name}_${field.name}`;
    fragments.push(
      `fragment Coverage_${name} on ${type.name} @refetchable(queryName: "Coverage${name}PaginationQuery") ` +
        `@argumentDefinitions(${defs.join(', ')}) { ${field.name}(${args.join(', ')}) ` +
        `@connection(key: "Coverage${name}_${field.name}") { edges { node { __typename } } } }`,
    );
  }
}
writeFileSync(
  out,
  `// Written by scripts/coverage.mjs from schema.graphql: do not edit.\nimport { graphql } from 'react-relay';\n\n` +
    `export const coverage = [\n${fragments.map((f) => `  graphql\`${f}\`,`).join('\n')}\n];\n`,
);
console.log(`wrote ${out}: ${connections} connections, ${fragments.length - connections} Node types`);
