// Live sessions: a business's new public sessions as they start, over the
// graph's `sessionStarted` subscription. By default in the graphql-sse
// protocol ("distinct connections" mode: one POST per subscription, answered
// as text/event-stream) read with fetch: EventSource cannot send the key
// header, and SSE needs no library and passes every proxy that passes plain
// HTTP. graphql-ws's protocol over WebSocket is the option. Hand-written to
// keep the SDK free of runtime dependencies.

import { LiveError } from "./errors";
import type { BusinessType, Session } from "./index";

/** Where a live subscription stands. */
export type LiveStatus = "connecting" | "live" | "reconnecting" | "closed";

export interface RetryOptions {
  /** The first reconnect's delay in milliseconds (default 500). */
  initialDelayMs?: number;
  /** The longest delay between two attempts in milliseconds (default 30000). */
  maxDelayMs?: number;
  /** Attempts in a row before giving up (default: never give up). */
  maxAttempts?: number;
}

export interface SubscribeSessionsOptions {
  businessType: BusinessType;
  businessId: string;
  /**
   * After a reconnect, read the sessions missed meanwhile from the feed
   * (getSessions with `from` the last seen session's createdAt), so that none
   * is lost across a dropped connection (default true).
   */
  backfill?: boolean;
  /** Reconnects: exponential back-off with jitter, capped. */
  retry?: RetryOptions;
  /** How many recent session IDs are remembered to drop duplicates (default 1000). */
  dedupeWindow?: number;
  /**
   * A connection that says nothing (no event, no heartbeat) for this long, in
   * milliseconds, is taken for dead and replaced (default 60000; 0: never).
   */
  idleTimeoutMs?: number;
  /** Ends the subscription, as the returned function does. */
  signal?: AbortSignal;
  /**
   * "sse" (default): GraphQL over SSE on fetch. "websocket": graphql-ws's
   * graphql-transport-ws protocol, over the global WebSocket or the
   * WebSocket option (e.g. the ws package's on Node 20).
   */
  transport?: "sse" | "websocket";
  /** A WebSocket class, for transport "websocket" where there is no global one. */
  WebSocket?: new (url: string, protocol: string) => WebSocket;
}

export interface SubscribeSessionsHandlers {
  /** A new session, once each, oldest first within a backfill. */
  onSession: (session: Session) => void;
  /**
   * A failure, with the server's code (a GraphQL error's `extensions.code`, a
   * REST error's `error`). onStatus says whether it reconnects ("reconnecting")
   * or stopped ("closed").
   */
  onError?: (error: LiveError) => void;
  onStatus?: (status: LiveStatus) => void;
}

// Codes that no retry can fix: the subscription stops after reporting them.
const FATAL_CODES = new Set([
  "UNAUTHENTICATED", "FORBIDDEN", "BAD_REQUEST", "BAD_USER_INPUT", "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED",
  "NOT_ACCEPTABLE", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE", "TRUSTED_DOCUMENTS_ONLY", "PERSISTED_QUERY_NOT_FOUND",
  "INVALID_VENUE", "INVALID_BRAND", "INSUFFICIENT_SCOPE", "TOKEN_REVOKED",
  "business_not_found", "unauthorized", "publishable_key", "origin_not_allowed",
]);

const WS_CLOSES: Record<number, [number, string, boolean]> = {
  4400: [400, "BAD_REQUEST", true],
  4401: [401, "UNAUTHENTICATED", true],
  4403: [403, "FORBIDDEN", true],
  4406: [406, "NOT_ACCEPTABLE", true],
  4410: [0, "SLOW_CONSUMER", false],
  4429: [429, "rate_limited", false],
};

/** The subscription the SDK sends: the feed's fields, as the REST feed names them. */
export const SESSION_STARTED = `subscription SessionStarted($venue: ID, $brand: ID) {
  sessionStarted(venue: $venue, brand: $brand) {
    id createdAt startedAt endedAt durationSeconds rating note featured
    user { id displayName avatarUrl: imageUrl } cigar { id name brand { name } } venue { id name }
  }
}`;

/**
 * The session as the REST feed shows it: the graph names a public session by
 * its own pse_ ID where the feed keeps the session's ses_ ID (same body), and
 * flattens the cigar's brand into brandName. Nulls of optional fields are left
 * out, as the feed does.
 */
export function sessionFromGraph(s: any, displayName: (u: any) => string): Session {
  const out: any = {};
  for (const [k, v] of Object.entries(s ?? {})) if (v !== null && v !== undefined) out[k] = v;
  if (typeof out.id === "string" && out.id.startsWith("pse_")) out.id = "ses_" + out.id.slice(4);
  out.user = { ...s?.user, displayName: displayName(s?.user ?? {}), avatarUrl: s?.user?.avatarUrl ?? null };
  if (out.cigar) {
    const { brand, ...cigar } = out.cigar;
    out.cigar = brand?.name ? { ...cigar, brandName: brand.name } : cigar;
  }
  return out as Session;
}

/**
 * The delay before reconnect attempt n (0 first): the exponential step
 * initial·2ⁿ capped at max, with "equal jitter" (half fixed, half random) so
 * that clients dropped together do not come back together, and none comes back
 * at once.
 */
export function backoffDelay(attempt: number, retry: RetryOptions = {}, random: () => number = Math.random): number {
  const initial = retry.initialDelayMs ?? 500;
  const max = retry.maxDelayMs ?? 30_000;
  const step = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return step / 2 + random() * (step / 2);
}

/** Remembers the last `size` IDs it saw, to drop what was already delivered. */
export class RecentIds {
  private readonly order: string[] = [];
  private readonly seen = new Set<string>();
  constructor(private readonly size: number) {}
  /** True the first time an ID is added within the window. */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    this.order.push(id);
    if (this.order.length > Math.max(1, this.size)) this.seen.delete(this.order.shift()!);
    return true;
  }
}

/** One server-sent event. */
export interface SSEEvent {
  event: string;
  data: string;
}

/**
 * An incremental text/event-stream parser (the WHATWG rules: LF, CRLF or CR
 * line ends, `:` comments, data lines joined by LF, a blank line dispatches).
 * Feed it decoded chunks split anywhere.
 */
export class SSEParser {
  private buf = "";
  private event = "";
  private data: string[] = [];
  private dispatchable = false;
  push(chunk: string): SSEEvent[] {
    this.buf += chunk;
    const out: SSEEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      // A CR at the end may be the first half of a CRLF: wait for more.
      if (!m || (m[0] === "\r" && m.index === this.buf.length - 1)) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      if (line === "") {
        if (this.dispatchable) out.push({ event: this.event || "message", data: this.data.join("\n") });
        this.event = "";
        this.data = [];
        this.dispatchable = false;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") {
        this.event = value;
        this.dispatchable = true;
      } else if (field === "data") {
        this.data.push(value);
        this.dispatchable = true;
      }
    }
    return out;
  }
}

/** What subscribe needs from the client. */
export interface LiveContext {
  base: string;
  apiKey: string;
  fetch: typeof fetch;
  /** The feed since a moment, newest first (the REST feed). */
  getSince: (from: string, signal: AbortSignal) => Promise<Session[]>;
  displayName: (u: any) => string;
}

/** A failure of one connection: `fatal` stops the subscription. */
class Failure {
  constructor(readonly status: number, readonly code: string, readonly message: string, readonly fatal: boolean) {}
}

function graphQLFailure(status: number, body: any, fallback: string): Failure {
  const first = Array.isArray(body?.errors) ? body.errors[0] : undefined;
  const code = String(first?.extensions?.code ?? body?.error ?? fallback);
  const message = String(first?.message ?? body?.message ?? `the API answered ${status}`);
  const fatal = FATAL_CODES.has(code) || (status >= 400 && status < 500 && status !== 408 && status !== 429);
  return new Failure(status, code, message, fatal);
}

export function subscribe(ctx: LiveContext, o: SubscribeSessionsOptions, h: SubscribeSessionsHandlers): () => void {
  if (o.businessType !== "venue" && o.businessType !== "brand") {
    throw new TypeError(`businessType must be "venue" or "brand", not ${JSON.stringify(o.businessType)}`);
  }
  if (!o.businessId) throw new TypeError("subscribeSessions: businessId is required");
  // Called detached: a browser's fetch refuses any `this` but the window.
  const doFetch = ctx.fetch;
  const stop = new AbortController();
  const recent = new RecentIds(o.dedupeWindow ?? 1000);
  const idleMs = o.idleTimeoutMs ?? 60_000;
  // The backfill's `from`: the newest session seen, else the server's clock
  // when the first connection was accepted (its Date header, when readable).
  let lastCreatedAt: string | undefined;
  let status: LiveStatus | undefined;
  const setStatus = (s: LiveStatus) => {
    if (s !== status && (status !== "closed" || s === "closed")) {
      status = s;
      h.onStatus?.(s);
    }
  };
  const deliver = (s: Session) => {
    if (stop.signal.aborted || !recent.add(s.id)) return;
    if (!lastCreatedAt || s.createdAt > lastCreatedAt) lastCreatedAt = s.createdAt;
    try {
      h.onSession(s);
    } catch (err) {
      // The handler's own bug: reported as uncaught, the stream goes on.
      setTimeout(() => {
        throw err;
      });
    }
  };
  const report = (f: Failure, willRetry: boolean) => {
    if (!stop.signal.aborted) h.onError?.(new LiveError(f.status, f.code, f.message, willRetry));
  };

  // result delivers an operation result's session, and returns its errors'
  // failure.
  const result = (r: any): Failure | undefined => {
    const s = r?.data?.sessionStarted;
    if (s) deliver(sessionFromGraph(s, ctx.displayName));
    if (Array.isArray(r?.errors) && r.errors.length) return graphQLFailure(200, r, "subscription_error");
    return undefined;
  };
  const operation = () => ({ query: SESSION_STARTED, operationName: "SessionStarted", variables: { [o.businessType]: o.businessId } });

  // idleTimer calls onIdle when touch has not been called for idleMs.
  const idleTimer = (onIdle: () => void) => {
    let t: ReturnType<typeof setTimeout> | undefined;
    return {
      touch: () => {
        clearTimeout(t);
        if (idleMs) t = setTimeout(onIdle, idleMs);
      },
      clear: () => clearTimeout(t),
    };
  };

  // One connection over SSE: resolves when the stream ends (cleanly or not),
  // throws a Failure the caller reports. `live` is called once the server
  // accepted it.
  async function connectSSE(live: () => void): Promise<void> {
    const conn = new AbortController();
    const abort = () => conn.abort();
    stop.signal.addEventListener("abort", abort);
    let timedOut = false;
    const idle = idleTimer(() => {
      timedOut = true;
      conn.abort();
    });
    try {
      idle.touch();
      let res: Response;
      try {
        res = await doFetch(`${ctx.base}/graphql`, {
          method: "POST",
          headers: { "x-service-key": ctx.apiKey, "content-type": "application/json", accept: "text/event-stream" },
          body: JSON.stringify(operation()),
          signal: conn.signal,
        });
      } catch (err) {
        if (stop.signal.aborted) return;
        throw new Failure(0, timedOut ? "timeout" : "network_error", timedOut ? "no answer from the server" : `could not reach the API: ${(err as Error).message}`, false);
      }
      const type = res.headers.get("content-type") ?? "";
      if (!res.ok || !type.startsWith("text/event-stream")) {
        let body: any = null;
        try {
          body = await res.json();
        } catch {
          // not JSON: the status says it
        }
        throw graphQLFailure(res.status, body, res.ok ? "bad_response" : "http_error");
      }
      if (!res.body) throw new Failure(res.status, "bad_response", "the answer has no body to stream", false);
      if (!lastCreatedAt) {
        const date = Date.parse(res.headers.get("date") ?? "");
        if (!Number.isNaN(date)) lastCreatedAt = new Date(date).toISOString();
      }
      live();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SSEParser();
      let failure: Failure | undefined;
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          if (stop.signal.aborted) return;
          throw new Failure(0, timedOut ? "timeout" : "network_error", timedOut ? `the connection was silent for ${idleMs} ms` : `the connection broke: ${(err as Error).message}`, false);
        }
        if (chunk.done) break;
        idle.touch();
        for (const ev of parser.push(decoder.decode(chunk.value, { stream: true }))) {
          if (ev.event === "complete") {
            await reader.cancel().catch(() => {});
            if (failure) throw failure;
            return;
          }
          if (ev.event !== "next" && ev.event !== "error") continue;
          let payload: any;
          try {
            payload = JSON.parse(ev.data);
          } catch {
            continue;
          }
          // graphql-sse puts errors in a `next` result; a server may also end a
          // stream with an `error` event (e.g. a slow consumer dropped).
          failure = result(ev.event === "error" ? (Array.isArray(payload) ? { errors: payload } : payload) : payload) ?? failure;
          if (failure?.fatal) {
            await reader.cancel().catch(() => {});
            throw failure;
          }
        }
      }
      if (failure) throw failure;
      if (!stop.signal.aborted) throw new Failure(0, "stream_ended", "the server closed the stream", false);
    } finally {
      idle.clear();
      stop.signal.removeEventListener("abort", abort);
    }
  }

  // One connection over WebSocket (graphql-transport-ws): the key goes in
  // connection_init's payload, as the x-service-key header goes with SSE.
  function connectWS(live: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const WS = o.WebSocket ?? (globalThis as any).WebSocket;
      if (!WS) return reject(new Failure(0, "no_websocket", "no WebSocket here: pass one as the WebSocket option, or use SSE", true));
      const ws: WebSocket = new WS(ctx.base.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
      let failure: Failure | undefined;
      let done = false;
      let keepAlive: ReturnType<typeof setInterval> | undefined;
      const finish = (f?: Failure) => {
        if (done) return;
        done = true;
        idle.clear();
        clearInterval(keepAlive);
        stop.signal.removeEventListener("abort", abort);
        try {
          ws.close(1000);
        } catch {
          // Node's ws throws when closed before it opened; browsers do not.
        }
        if (f && !stop.signal.aborted) reject(f);
        else resolve();
      };
      const abort = () => finish();
      const idle = idleTimer(() => finish(new Failure(0, "timeout", `the connection was silent for ${idleMs} ms`, false)));
      const send = (m: object) => ws.send(JSON.stringify(m));
      stop.signal.addEventListener("abort", abort);
      idle.touch();
      ws.onerror = () => {}; // onclose follows with the code
      ws.onopen = () => send({ type: "connection_init", payload: { "x-service-key": ctx.apiKey } });
      ws.onmessage = (ev: MessageEvent) => {
        idle.touch();
        let m: any;
        try {
          m = JSON.parse(String(ev.data));
        } catch {
          return;
        }
        if (m.type === "connection_ack") {
          send({ id: "1", type: "subscribe", payload: operation() });
          // A server's heartbeat may be WebSocket ping frames, which a
          // browser's WebSocket never shows: our pings' pongs prove it alive.
          if (idleMs) keepAlive = setInterval(() => send({ type: "ping" }), idleMs / 4);
          live();
        } else if (m.type === "ping") send({ type: "pong" });
        else if (m.type === "next") {
          failure = result(m.payload) ?? failure;
          if (failure?.fatal) finish(failure);
        } else if (m.type === "error") finish(graphQLFailure(200, { errors: m.payload }, "subscription_error"));
        else if (m.type === "complete") finish(failure ?? new Failure(0, "stream_ended", "the server completed the subscription", false));
      };
      // graphql-transport-ws's close codes (and the router's 4410, 4411): a
      // bad message, missing or refused credentials and a wrong subprotocol
      // stop it; the rest (a timeout, a slow consumer, too many at once, a
      // server going away) reconnect.
      ws.onclose = (ev: CloseEvent) => {
        const [status, code, fatal] = WS_CLOSES[ev.code] ?? [0, "connection_closed", false];
        finish(failure ?? new Failure(status, code, ev.reason || `the connection closed (${ev.code})`, fatal));
      };
    });
  }

  async function backfill() {
    if (o.backfill === false || !lastCreatedAt) return;
    const missed = await ctx.getSince(lastCreatedAt, stop.signal);
    for (const s of [...missed].reverse()) deliver(s);
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        stop.signal.removeEventListener("abort", done);
        resolve();
      }
      stop.signal.addEventListener("abort", done);
    });

  const unsubscribe = () => {
    stop.abort();
    setStatus("closed");
  };
  if (o.signal?.aborted) unsubscribe();
  o.signal?.addEventListener("abort", unsubscribe);

  (async () => {
    let attempt = 0;
    let connectedOnce = false;
    setStatus("connecting");
    while (!stop.signal.aborted) {
      let since = 0;
      try {
        await (o.transport === "websocket" ? connectWS : connectSSE)(() => {
          since = Date.now();
          setStatus("live");
          if (connectedOnce) {
            backfill().catch((err) => report(new Failure(err?.status ?? 0, err?.code ?? "backfill_failed", `missed sessions could not be read: ${err?.message}`, false), true));
          }
          connectedOnce = true;
        });
        if (stop.signal.aborted) break;
      } catch (err) {
        if (stop.signal.aborted) break;
        const f = err instanceof Failure ? err : new Failure(0, "internal_error", String((err as Error)?.message ?? err), false);
        const last = o.retry?.maxAttempts !== undefined && attempt + 1 >= o.retry.maxAttempts;
        if (f.fatal || last) {
          report(f, false);
          break;
        }
        report(f, true);
      }
      if (stop.signal.aborted) break;
      // A stream that stayed up a while was healthy: start the back-off over.
      if (since && Date.now() - since >= 10 * (o.retry?.initialDelayMs ?? 500)) attempt = 0;
      setStatus("reconnecting");
      await sleep(backoffDelay(attempt++, o.retry));
    }
    setStatus("closed");
    stop.abort();
    o.signal?.removeEventListener("abort", unsubscribe);
  })();

  return unsubscribe;
}
