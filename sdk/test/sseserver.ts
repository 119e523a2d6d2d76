// A local HTTP server speaking the graphql-sse protocol (distinct connections
// mode) and the REST feed, for the live tests: each test scripts what every
// subscription request gets, and reads back what the client sent.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface SubscribeRequest {
  at: number;
  headers: IncomingMessage["headers"];
  body: any;
  res: ServerResponse;
  /** Resolves when the client goes away. */
  closed: Promise<void>;
}

export interface FeedRequest {
  url: URL;
  headers: IncomingMessage["headers"];
}

// Session n starts n seconds after a minute from now: after every connection
// of a test, as new sessions are (a backfill reads from a connection's time).
const epoch = Math.ceil(Date.now() / 1000) * 1000 + 60_000;

/** A graph PublicSession, as the subscription yields it. */
export function graphSession(n: number, extra: Record<string, unknown> = {}) {
  return {
    id: `pse_${String(n).padStart(16, "0")}`,
    createdAt: new Date(epoch + n * 1000).toISOString(),
    startedAt: new Date(epoch + n * 1000).toISOString(),
    endedAt: null,
    durationSeconds: null,
    rating: 4.5,
    note: null,
    featured: false,
    user: { id: `usr_${n}`, displayName: `User ${n}`, avatarUrl: null },
    cigar: { id: "cig_1", name: "Exclusivo", brand: { name: "Padrón" } },
    venue: { id: "ven_1", name: "The Ember Room" },
    ...extra,
  };
}

/** The same session as the REST feed shows it. */
export function restSession(n: number) {
  const g = graphSession(n);
  return { id: g.id.replace("pse_", "ses_"), createdAt: g.createdAt, startedAt: g.startedAt, rating: 4.5, featured: false, user: g.user, cigar: { id: "cig_1", name: "Exclusivo", brandName: "Padrón" }, venue: g.venue };
}

export const next = (session: unknown) => `event: next\ndata: ${JSON.stringify({ data: { sessionStarted: session } })}\n\n`;
export const complete = "event: complete\ndata:\n\n";

export async function startServer(onSubscribe: (r: SubscribeRequest, n: number) => void, onFeed: (r: FeedRequest) => unknown = () => ({ data: [], meta: { count: 0, limit: 100, offset: 0 } })) {
  const subscribes: SubscribeRequest[] = [];
  const feeds: FeedRequest[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url!, "http://x");
    if (req.method === "GET" && /^\/(venues|brands)\/[^/]+\/sessions$/.test(url.pathname)) {
      feeds.push({ url, headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(onFeed({ url, headers: req.headers })));
      return;
    }
    if (req.method !== "POST" || url.pathname !== "/graphql") {
      res.writeHead(404).end();
      return;
    }
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      const closed = new Promise<void>((resolve) => res.on("close", () => resolve()));
      const r = { at: performance.now(), headers: req.headers, body: JSON.parse(text), res, closed };
      subscribes.push(r);
      onSubscribe(r, subscribes.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    subscribes,
    feeds,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Opens the event stream of a subscription request. */
export function openStream(r: SubscribeRequest) {
  r.res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  r.res.flushHeaders();
}

/** Waits until cond holds, polling (bounded: a test's timeout ends it). */
export async function until(cond: () => boolean, what: string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
