// Writes the SDL a running Vitola server introspects to schema.graphql, for
// relay-compiler: node scripts/schema.mjs <graphql URL> <developer key>
// (the Relay example's script of the same name, with this folder's packages).
import { writeFileSync } from 'node:fs';
import { buildClientSchema, getIntrospectionQuery, printSchema } from 'graphql';

const [url, key] = process.argv.slice(2);
const res = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-service-key': key },
  body: JSON.stringify({ query: getIntrospectionQuery() }),
});
const body = await res.json();
if (!res.ok || body.errors || !body.data) throw new Error(`introspection failed (${res.status}): ${JSON.stringify(body)}`);
writeFileSync('schema.graphql', printSchema(buildClientSchema(body.data)) + '\n');
