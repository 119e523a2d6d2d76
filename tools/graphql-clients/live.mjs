// Subscribes to a venue's live sessions on a live Vitola server with the
// clients frontend apps use: graphql-ws (WebSocket, a secret key in
// connectionParams) and graphql-sse (distinct connections mode, a
// publishable key from its website's origin). Once each has received a
// session, it prints both events as one JSON object and exits; platform's
// TestLiveSessionsNodeClients starts sessions meanwhile and judges them.
//
// VITOLA_LIVE_URL is the server's /graphql, VITOLA_LIVE_KEY a secret key,
// VITOLA_LIVE_PUBLISHABLE a publishable key for VITOLA_LIVE_ORIGIN,
// VITOLA_LIVE_VENUE the venue's ID, and VITOLA_GRAPHQL_CLIENTS the folder
// where `make tools` installed the pinned clients.
import { createRequire } from 'node:module';
import path from 'node:path';

const env = process.env;
const { VITOLA_LIVE_URL: url, VITOLA_LIVE_KEY: key, VITOLA_LIVE_PUBLISHABLE: publishable,
  VITOLA_LIVE_ORIGIN: origin, VITOLA_LIVE_VENUE: venue, VITOLA_GRAPHQL_CLIENTS: dir } = env;
if (!url || !key || !publishable || !origin || !venue || !dir) {
  console.error('set VITOLA_LIVE_URL, VITOLA_LIVE_KEY, VITOLA_LIVE_PUBLISHABLE, VITOLA_LIVE_ORIGIN, VITOLA_LIVE_VENUE and VITOLA_GRAPHQL_CLIENTS');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(dir), 'package.json'));
const ws = require('graphql-ws');
const sse = require('graphql-sse');
const WebSocket = require('ws');

const query = 'subscription Live($venue: ID) { sessionStarted(venue: $venue) { id note cigar { name } venue { name } } }';
const request = { query, variables: { venue } };

const first = (subscribe) => new Promise((resolve, reject) => {
  let dispose = () => {};
  dispose = subscribe(request, {
    next: (result) => { resolve(result); dispose(); },
    error: (err) => reject(err instanceof Error ? err : new Error(JSON.stringify(err))),
    complete: () => {},
  });
});

const wsClient = ws.createClient({
  url: url.replace(/^http/, 'ws'),
  webSocketImpl: WebSocket,
  connectionParams: { 'x-service-key': key },
  retryAttempts: 0,
});
const sseClient = sse.createClient({
  url,
  headers: { 'x-service-key': publishable, origin },
  retryAttempts: 0,
});

const timer = setTimeout(() => {
  console.error('no session within 60 s');
  process.exit(1);
}, 60_000);
try {
  const [overWS, overSSE] = await Promise.all([
    first((req, sink) => wsClient.subscribe(req, sink)),
    first((req, sink) => sseClient.subscribe(req, sink)),
  ]);
  console.log(JSON.stringify({ ws: overWS, sse: overSSE }));
} catch (err) {
  console.error(String(err?.message ?? err));
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
  await wsClient.dispose();
  sseClient.dispose();
}
