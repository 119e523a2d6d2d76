// Runs graphql-http's server audit (serverAudits) against a live Vitola
// server and prints every audit's result as one JSON array; platform's
// TestGraphQLOverHTTPAudit starts the server, runs this and judges the result.
//
// VITOLA_AUDIT_URL is the server's /graphql, VITOLA_AUDIT_KEY a developer key
// that every request of the audit carries (through its fetchFn), and
// VITOLA_GRAPHQL_HTTP the folder where `make tools` installed the pinned
// graphql-http (its package.json and node_modules).
import { createRequire } from 'node:module';
import path from 'node:path';

const { VITOLA_AUDIT_URL: url, VITOLA_AUDIT_KEY: key, VITOLA_GRAPHQL_HTTP: dir } = process.env;
if (!url || !key || !dir) {
  console.error('set VITOLA_AUDIT_URL, VITOLA_AUDIT_KEY and VITOLA_GRAPHQL_HTTP');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(dir), 'package.json'));
const { serverAudits } = require('graphql-http');

// Every request of the audit gets the developer key, whatever else it sends.
const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set('x-service-key', key);
  return fetch(input, { ...init, headers });
};

const results = [];
for (const audit of serverAudits({ url, fetchFn })) {
  const r = await audit.fn();
  const out = { id: r.id, name: r.name, status: r.status };
  if (r.status !== 'ok') {
    out.reason = r.reason;
    out.responseStatus = r.response?.status;
    try {
      out.responseBody = await r.response?.text();
    } catch {
      // the audit may have read the body already
    }
  }
  results.push(out);
}
console.log(JSON.stringify(results));
