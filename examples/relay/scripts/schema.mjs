// Writes the SDL of a running Vitola server's public graph, as its introspection
// shows it, to schema.graphql (relay-compiler reads it).
//
//   node scripts/schema.mjs https://vitola.example/graphql <developer key> [out]
//
// The URL and key may come from VITOLA_GRAPHQL_URL and VITOLA_API_KEY instead.
import { writeFileSync } from 'node:fs';
import { buildClientSchema, getIntrospectionQuery, printSchema } from 'graphql';

const url = process.argv[2] ?? process.env.VITOLA_GRAPHQL_URL;
const key = process.argv[3] ?? process.env.VITOLA_API_KEY;
const out = process.argv[4] ?? 'schema.graphql';
if (!url || !key) {
  console.error('usage: node scripts/schema.mjs <graphql URL> <developer key> [out]');
  process.exit(2);
}
const res = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-service-key': key },
  body: JSON.stringify({ query: getIntrospectionQuery() }),
});
const body = await res.json().catch(() => ({}));
if (!res.ok || body.errors || !body.data) {
  console.error(`introspection failed (${res.status}): ${JSON.stringify(body.errors ?? body)}`);
  process.exit(1);
}
writeFileSync(out, printSchema(buildClientSchema(body.data)) + '\n');
console.log(`wrote ${out}`);
