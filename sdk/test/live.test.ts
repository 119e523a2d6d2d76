import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket as WS, WebSocketServer } from "ws";
import { createClient, LiveError, subscribeSessions, type LiveStatus, type Session } from "../src/index";
import { backoffDelay, RecentIds, SSEParser } from "../src/live";
import { complete, graphSession, next, openStream, restSession, startServer, until } from "./sseserver";

describe("SSEParser", () => {
  const stream = ": heartbeat\r\nevent: next\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n:\n\nevent:complete\rdata\r\r" + "data: x\n\n";
  const want = [
    { event: "next", data: '{"a":\n1}' },
    { event: "complete", data: "" },
    { event: "message", data: "x" },
  ];
  it.each([
    ["whole", [stream]],
    ["char by char", Array.from(stream)],
    ["split inside every CRLF", stream.split("\n").map((s, i, a) => (i < a.length - 1 ? s + "\n" : s)).flatMap((s) => (s.endsWith("\r\n") ? [s.slice(0, -1), "\n"] : [s]))],
  ])("reads events fed %s", (_, chunks) => {
    const p = new SSEParser();
    expect(chunks.flatMap((c) => p.push(c))).toEqual(want);
  });
});

describe("backoffDelay", () => {
  it.each([
    // attempt, random, delay: step = min(max, 100·2ⁿ), half fixed, half jitter
    [0, 0, 50],
    [0, 1, 100],
    [1, 0.5, 150],
    [3, 0, 400],
    [4, 1, 1000], // 1600 capped at 1000
    [60, 0.5, 750],
  ])("attempt %i with random %f waits %i ms", (attempt, random, want) => {
    expect(backoffDelay(attempt, { initialDelayMs: 100, maxDelayMs: 1000 }, () => random)).toBe(want);
  });
});

describe("RecentIds", () => {
  it("drops a repeat within its window and forgets beyond it", () => {
    const r = new RecentIds(2);
    expect([r.add("a"), r.add("a"), r.add("b"), r.add("c"), r.add("b"), r.add("a")]).toEqual([true, false, true, true, false, true]);
  });
});

// What a subscription saw, and its unsubscribe function.
function watch(url: string, extra: Record<string, unknown> = {}) {
  const seen = { sessions: [] as Session[], errors: [] as LiveError[], statuses: [] as LiveStatus[] };
  const unsubscribe = subscribeSessions(
    { baseUrl: url, apiKey: "vpk_test", businessType: "venue", businessId: "ven_1", retry: { initialDelayMs: 20, maxDelayMs: 80 }, ...extra },
    {
      onSession: (s) => seen.sessions.push(s),
      onError: (e) => seen.errors.push(e as LiveError),
      onStatus: (s) => seen.statuses.push(s),
    },
  );
  return { seen, unsubscribe };
}

let cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function server(...args: Parameters<typeof startServer>) {
  const s = await startServer(...args);
  cleanup.push(s.close);
  return s;
}

function watched(url: string, extra?: Record<string, unknown>) {
  const w = watch(url, extra);
  cleanup.push(w.unsubscribe);
  return w;
}

describe("subscribeSessions over graphql-sse", () => {
  it("subscribes with the key and streams sessions in the feed's shape", async () => {
    const srv = await server((r) => {
      openStream(r);
      // One event split mid-line, a heartbeat, then two in one write.
      const text = next(graphSession(1)) + ":\n\n" + next(graphSession(2, { note: "Smooth", durationSeconds: 3600 })) + next(graphSession(3, { cigar: null, user: { id: "usr_3", displayName: "", avatarUrl: "https://img.example/a.png" } }));
      r.res.write(text.slice(0, 37));
      setTimeout(() => r.res.write(text.slice(37)), 20);
    });
    const { seen } = watched(srv.url, { businessType: "brand", businessId: "brd_9" });
    await until(() => seen.sessions.length === 3, "three sessions");
    const req = srv.subscribes[0]!;
    expect(req.headers["x-service-key"]).toBe("vpk_test");
    expect(req.headers.accept).toBe("text/event-stream");
    expect(req.body.variables).toEqual({ brand: "brd_9" });
    expect(req.body.query).toMatch(/sessionStarted\(venue: \$venue, brand: \$brand\)/);
    expect(seen.sessions[0]).toEqual(restSession(1));
    expect(seen.sessions[1]).toMatchObject({ id: "ses_0000000000000002", note: "Smooth", durationSeconds: 3600 });
    expect(seen.sessions[2]!.cigar).toBeUndefined();
    expect(seen.sessions[2]!.user).toEqual({ id: "usr_3", displayName: "Vitola member", avatarUrl: "https://img.example/a.png" });
    expect(seen.statuses).toEqual(["connecting", "live"]);
    expect(seen.errors).toEqual([]);
  });

  it("reports a refusal with the server's code and stops", async () => {
    const srv = await server((r) => {
      r.res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "not from this origin", extensions: { code: "FORBIDDEN" } }] }));
    });
    const { seen } = watched(srv.url);
    await until(() => seen.statuses.includes("closed"), "closed");
    expect(seen.errors).toHaveLength(1);
    expect(seen.errors[0]).toBeInstanceOf(LiveError);
    expect(seen.errors[0]).toMatchObject({ status: 403, code: "FORBIDDEN", message: "not from this origin", willRetry: false });
    expect(srv.subscribes).toHaveLength(1);
    expect(seen.statuses).toEqual(["connecting", "closed"]);
  });

  it("reconnects after failures with a growing, capped back-off", async () => {
    const srv = await server((r, n) => {
      if (n < 4) r.res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "busy", extensions: { code: "UNAVAILABLE" } }] }));
      else openStream(r);
    });
    const { seen } = watched(srv.url);
    await until(() => seen.statuses.at(-1) === "live", "live");
    expect(seen.errors.map((e) => [e.code, e.willRetry])).toEqual(Array(4).fill(["UNAVAILABLE", true]));
    expect(seen.statuses).toEqual(["connecting", "reconnecting", "live"]);
    // Timers never fire early: each gap is at least half its step (20, 40, 80, 80 ms).
    const gaps = srv.subscribes.slice(1).map((r, i) => r.at - srv.subscribes[i]!.at);
    gaps.forEach((g, i) => expect(g).toBeGreaterThanOrEqual(Math.min(80, 20 * 2 ** i) / 2 - 2));
  });

  it("gives up after maxAttempts", async () => {
    const srv = await server((r) => r.res.writeHead(502).end("<html>bad gateway</html>"));
    const { seen } = watched(srv.url, { retry: { initialDelayMs: 5, maxAttempts: 3 } });
    await until(() => seen.statuses.includes("closed"), "closed");
    expect(srv.subscribes).toHaveLength(3);
    expect(seen.errors.map((e) => [e.status, e.code, e.willRetry])).toEqual([[502, "http_error", true], [502, "http_error", true], [502, "http_error", false]]);
  });

  it("delivers each session once across a reconnect, backfilling what it missed", async () => {
    const srv = await server(
      (r, n) => {
        openStream(r);
        if (n === 0) {
          r.res.write(next(graphSession(1)) + next(graphSession(2)));
          setTimeout(() => r.res.destroy(), 30); // the connection breaks
        } else {
          r.res.write(next(graphSession(2)) + next(graphSession(4)));
        }
      },
      // Session 3 started while the client was away; the feed's from includes session 2 again.
      () => ({ data: [restSession(3), restSession(2)], meta: { count: 2, limit: 100, offset: 0 } }),
    );
    const { seen } = watched(srv.url);
    await until(() => seen.sessions.length >= 4 && srv.feeds.length === 1, "four sessions and a backfill");
    await new Promise((r) => setTimeout(r, 50)); // room for a duplicate to show up
    expect(seen.sessions.map((s) => s.id).sort()).toEqual([1, 2, 3, 4].map((n) => restSession(n).id));
    const feed = srv.feeds[0]!;
    expect(feed.url.pathname).toBe("/venues/ven_1/sessions");
    expect(feed.url.searchParams.get("from")).toBe(restSession(2).createdAt);
    expect(feed.headers["x-service-key"]).toBe("vpk_test");
    expect(seen.errors.map((e) => e.code)).toEqual(["network_error"]);
    expect(seen.statuses).toEqual(["connecting", "live", "reconnecting", "live"]);
  });

  it("backfills from the server's clock when it saw no session yet", async () => {
    const srv = await server(
      (r, n) => {
        openStream(r);
        if (n === 0) setTimeout(() => r.res.destroy(), 30);
      },
      () => ({ data: [restSession(7)], meta: { count: 1, limit: 100, offset: 0 } }),
    );
    const before = Math.floor(Date.now() / 1000) * 1000; // Date has whole seconds
    const { seen } = watched(srv.url);
    await until(() => seen.sessions.length === 1, "the missed session");
    const from = Date.parse(srv.feeds[0]!.url.searchParams.get("from")!);
    expect(from).toBeGreaterThanOrEqual(before);
    expect(from).toBeLessThanOrEqual(Date.now());
    expect(seen.sessions[0]!.id).toBe(restSession(7).id);
  });

  it("does not backfill when told not to", async () => {
    const srv = await server((r, n) => {
      openStream(r);
      r.res.write(next(graphSession(n + 1)));
      if (n === 0) r.res.end(complete);
    });
    const { seen } = watched(srv.url, { backfill: false });
    await until(() => seen.sessions.length === 2, "two sessions");
    expect(srv.feeds).toHaveLength(0);
  });

  it("stops on a fatal error inside the stream, with its code", async () => {
    const srv = await server((r) => {
      openStream(r);
      r.res.end(`event: next\ndata: ${JSON.stringify({ errors: [{ message: "the token was revoked", extensions: { code: "TOKEN_REVOKED" } }] })}\n\n${complete}`);
    });
    const { seen } = watched(srv.url);
    await until(() => seen.statuses.includes("closed"), "closed");
    expect(seen.errors.map((e) => [e.code, e.message, e.willRetry])).toEqual([["TOKEN_REVOKED", "the token was revoked", false]]);
    expect(srv.subscribes).toHaveLength(1);
  });

  it("resubscribes after a server's complete, a retryable error (a replica shutting down, a slow consumer dropped) or an error event", async () => {
    const srv = await server((r, n) => {
      openStream(r);
      if (n === 0) r.res.end(complete);
      if (n === 1) r.res.end(`event: next\ndata: ${JSON.stringify({ errors: [{ message: "shutting down", extensions: { code: "SHUTTING_DOWN" } }], data: null })}\n\n${complete}`);
      if (n === 2) r.res.end(`event: error\ndata: ${JSON.stringify([{ message: "too slow", extensions: { code: "SLOW_CONSUMER" } }])}\n\n`);
    });
    const { seen } = watched(srv.url);
    await until(() => srv.subscribes.length === 4 && seen.statuses.at(-1) === "live", "a fourth subscription");
    expect(seen.errors.map((e) => [e.code, e.willRetry])).toEqual([["SHUTTING_DOWN", true], ["SLOW_CONSUMER", true]]);
  });

  it("replaces a silent connection", async () => {
    const srv = await server((r) => openStream(r));
    const { seen } = watched(srv.url, { idleTimeoutMs: 100 });
    await until(() => srv.subscribes.length === 2, "a second subscription");
    expect(seen.errors[0]).toMatchObject({ code: "timeout", willRetry: true });
  });

  it("unsubscribes: the request is aborted, nothing more is delivered, no reconnect", async () => {
    const srv = await server((r) => {
      openStream(r);
      r.res.write(next(graphSession(1)));
    });
    const { seen, unsubscribe } = watched(srv.url);
    await until(() => seen.sessions.length === 1, "a session");
    unsubscribe();
    await srv.subscribes[0]!.closed;
    srv.subscribes[0]!.res.write(next(graphSession(2)));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.sessions).toHaveLength(1);
    expect(srv.subscribes).toHaveLength(1);
    expect(seen.statuses).toEqual(["connecting", "live", "closed"]);
    expect(seen.errors).toEqual([]);
  });

  it("ends when its signal aborts, even while waiting to reconnect", async () => {
    const srv = await server((r) => r.res.writeHead(503).end());
    const controller = new AbortController();
    const { seen } = watched(srv.url, { signal: controller.signal, retry: { initialDelayMs: 60_000 } });
    await until(() => seen.statuses.includes("reconnecting"), "reconnecting");
    controller.abort();
    expect(seen.statuses.at(-1)).toBe("closed");
    expect(srv.subscribes).toHaveLength(1);
  });

  it("keeps streaming when a handler throws, reporting the throw as uncaught", async () => {
    const srv = await server((r) => {
      openStream(r);
      r.res.write(next(graphSession(1)) + next(graphSession(2)));
    });
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on("uncaughtException", onUncaught);
    cleanup.push(() => process.off("uncaughtException", onUncaught));
    const ids: string[] = [];
    const unsubscribe = subscribeSessions(
      { baseUrl: srv.url, apiKey: "k", businessType: "venue", businessId: "ven_1" },
      {
        onSession: (s) => {
          ids.push(s.id);
          if (ids.length === 1) throw new Error("the page's bug");
        },
      },
    );
    cleanup.push(unsubscribe);
    await until(() => ids.length === 2 && uncaught.length === 1, "both sessions and the uncaught error");
    expect(String(uncaught[0])).toMatch(/the page's bug/);
    expect(srv.subscribes).toHaveLength(1);
  });

  it("refuses bad input before any request", () => {
    const client = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
    expect(() => client.subscribeSessions({ businessType: "shop" as never, businessId: "x" }, { onSession: () => {} })).toThrow(TypeError);
    expect(() => client.subscribeSessions({ businessType: "venue", businessId: "" }, { onSession: () => {} })).toThrow(TypeError);
  });
});

// A graphql-transport-ws server (the ws package's): each test scripts what a
// connection gets after its connection_init.
async function wsServer(onInit: (ws: WebSocket, init: any, n: number, messages: any[]) => void) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, handleProtocols: (p) => (p.has("graphql-transport-ws") ? "graphql-transport-ws" : false) });
  const conns: { messages: any[]; closed: Promise<void> }[] = [];
  wss.on("connection", (ws) => {
    const c = { messages: [] as any[], closed: new Promise<void>((r) => ws.on("close", () => r())) };
    conns.push(c);
    const n = conns.length - 1;
    ws.on("message", (data) => {
      const m = JSON.parse(String(data));
      c.messages.push(m);
      if (m.type === "connection_init") onInit(ws as unknown as WebSocket, m, n, c.messages);
    });
  });
  await new Promise<void>((r) => wss.on("listening", () => r()));
  cleanup.push(() => new Promise<void>((r) => {
    for (const c of wss.clients) c.terminate();
    wss.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`, conns };
}

const wsNext = (session: unknown) => JSON.stringify({ id: "1", type: "next", payload: { data: { sessionStarted: session } } });

describe("subscribeSessions over WebSocket (graphql-transport-ws)", () => {
  const ws = { transport: "websocket", WebSocket: WS };

  it("sends the key in connection_init, subscribes after the ack, answers pings, streams sessions", async () => {
    const srv = await wsServer((sock, _init, _n, messages) => {
      sock.send(JSON.stringify({ type: "connection_ack" }));
      const wait = setInterval(() => {
        if (!messages.some((m) => m.type === "subscribe")) return;
        clearInterval(wait);
        sock.send(JSON.stringify({ type: "ping" }));
        sock.send(wsNext(graphSession(1)));
        sock.send(wsNext(graphSession(1)));
        sock.send(wsNext(graphSession(2)));
      }, 5);
    });
    const { seen } = watched(srv.url, ws);
    await until(() => seen.sessions.length === 2 && srv.conns[0]!.messages.some((m) => m.type === "pong"), "two sessions and a pong");
    const [init, sub] = srv.conns[0]!.messages;
    expect(init).toEqual({ type: "connection_init", payload: { "x-service-key": "vpk_test" } });
    expect(sub).toMatchObject({ id: "1", type: "subscribe", payload: { operationName: "SessionStarted", variables: { venue: "ven_1" } } });
    expect(seen.sessions.map((s) => s.id)).toEqual([restSession(1).id, restSession(2).id]);
    expect(seen.sessions[0]).toEqual(restSession(1));
    expect(seen.statuses).toEqual(["connecting", "live"]);
  });

  it.each([
    [4403, 403, "FORBIDDEN"],
    [4401, 401, "UNAUTHENTICATED"],
    [4400, 400, "BAD_REQUEST"],
  ])("stops on close code %i, a refusal, with the reason", async (close, status, code) => {
    const srv = await wsServer((sock) => sock.close(close, "unknown developer key"));
    const { seen } = watched(srv.url, ws);
    await until(() => seen.statuses.includes("closed"), "closed");
    expect(seen.errors.map((e) => [e.status, e.code, e.message, e.willRetry])).toEqual([[status, code, "unknown developer key", false]]);
    expect(srv.conns).toHaveLength(1);
  });

  it("reconnects after a going-away close, an error message, a slow consumer's or a heartbeat's close, without duplicates", async () => {
    const srv = await wsServer((sock, _init, n) => {
      sock.send(JSON.stringify({ type: "connection_ack" }));
      sock.send(wsNext(graphSession(1)));
      if (n === 0) setTimeout(() => sock.close(1001, "server shutting down"), 20);
      if (n === 1) sock.send(JSON.stringify({ id: "1", type: "error", payload: [{ message: "too slow", extensions: { code: "SLOW_CONSUMER" } }] }));
      if (n === 2) setTimeout(() => sock.close(4410, "slow consumer: 32 events waiting"), 20);
      if (n === 3) setTimeout(() => sock.close(4411, "heartbeat: the client did not answer a ping in time"), 20);
    });
    // This server has no feed to backfill from (the backfill is SSE's tests').
    const { seen } = watched(srv.url, { ...ws, backfill: false });
    await until(() => srv.conns.length === 5 && seen.statuses.at(-1) === "live", "a fifth connection");
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.sessions.map((s) => s.id)).toEqual([restSession(1).id]);
    expect(seen.errors.map((e) => [e.code, e.message, e.willRetry])).toEqual([
      ["connection_closed", "server shutting down", true],
      ["SLOW_CONSUMER", "too slow", true],
      ["SLOW_CONSUMER", "slow consumer: 32 events waiting", true],
      ["connection_closed", "heartbeat: the client did not answer a ping in time", true],
    ]);
  });

  it("pings a quiet server and keeps the connection while it answers", async () => {
    const srv = await wsServer((sock) => {
      sock.send(JSON.stringify({ type: "connection_ack" }));
      (sock as any).on("message", (data: unknown) => JSON.parse(String(data)).type === "ping" && sock.send(JSON.stringify({ type: "pong" })));
    });
    const { seen } = watched(srv.url, { ...ws, idleTimeoutMs: 200 });
    await until(() => (srv.conns[0]?.messages ?? []).filter((m) => m.type === "ping").length >= 8, "eight pings");
    expect(srv.conns).toHaveLength(1);
    expect(seen.errors).toEqual([]);
  });

  it("replaces a connection whose pings go unanswered", async () => {
    const srv = await wsServer((sock) => sock.send(JSON.stringify({ type: "connection_ack" })));
    const { seen } = watched(srv.url, { ...ws, idleTimeoutMs: 100 });
    await until(() => srv.conns.length === 2, "a second connection");
    expect(srv.conns[0]!.messages.some((m) => m.type === "ping")).toBe(true);
    expect(seen.errors[0]).toMatchObject({ code: "timeout", willRetry: true });
  });

  it("unsubscribes by closing the socket", async () => {
    const srv = await wsServer((sock) => sock.send(JSON.stringify({ type: "connection_ack" })));
    const { seen, unsubscribe } = watched(srv.url, ws);
    await until(() => seen.statuses.includes("live"), "live");
    unsubscribe();
    await srv.conns[0]!.closed;
    expect(seen.statuses).toEqual(["connecting", "live", "closed"]);
    expect(seen.errors).toEqual([]);
  });

  it("says so where there is no WebSocket", async () => {
    const { seen } = watched("http://127.0.0.1:1", { transport: "websocket", WebSocket: undefined });
    await until(() => seen.statuses.includes("closed"), "closed");
    expect(seen.errors.map((e) => [e.code, e.willRetry])).toEqual([["no_websocket", false]]);
  });
});
