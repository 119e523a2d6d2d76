// @vitest-environment jsdom
import { renderHook, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient } from "../src/index";
import { useLiveSessions } from "../src/react";
import { graphSession, next, openStream, restSession, startServer } from "./sseserver";

let cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

const page = (...ns: number[]) => ({ data: ns.map(restSession), meta: { count: ns.length, limit: 20, offset: 0 } });

async function setup(...args: Parameters<typeof startServer>) {
  const srv = await startServer(...args);
  cleanup.push(srv.close);
  // Node's own fetch: the real HTTP stack, from the jsdom environment.
  const client = createClient({ baseUrl: srv.url, apiKey: "vpk_test", fetch: globalThis.fetch });
  return { srv, client };
}

describe("useLiveSessions", () => {
  it("shows the first page, then each new session on top, once, at most maxItems", async () => {
    const { srv, client } = await setup((r) => openStream(r), (r) => (r.url.searchParams.get("limit") === "3" ? page(3, 2, 1) : page()));
    const { result } = renderHook(() => useLiveSessions({ client, businessType: "venue", businessId: "ven_1", limit: 3 }));
    expect(result.current).toMatchObject({ isLoading: true, status: "connecting", data: undefined });
    await waitFor(() => expect(result.current.isLoading).toBe(false));
    await waitFor(() => expect(result.current.status).toBe("live"));
    expect(result.current.data?.map((s) => s.id)).toEqual([3, 2, 1].map((n) => restSession(n).id));

    const stream = srv.subscribes[0]!;
    expect(stream.body.variables).toEqual({ venue: "ven_1" });
    // Session 3 is already on the page; 4 is new and pushes 1 out (limit 3).
    stream.res.write(next(graphSession(3)) + next(graphSession(4)));
    await waitFor(() => expect(result.current.data?.map((s) => s.id)).toEqual([4, 3, 2].map((n) => restSession(n).id)));
    expect(result.current.error).toBeUndefined();
  });

  it("keeps sessions that arrive before the page", async () => {
    let answer: (() => void) | undefined;
    const { srv } = await setup(
      (r) => {
        openStream(r);
        r.res.write(next(graphSession(5)));
      },
      () => page(2, 1),
    );
    // The page waits until the live session has been seen.
    const slow = (async (input: RequestInfo | URL, init?: RequestInit) => {
      if (String(input).includes("/sessions")) await new Promise<void>((r) => (answer = r));
      return fetch(input, init);
    }) as typeof fetch;
    const slowClient = createClient({ baseUrl: srv.url, apiKey: "vpk_test", fetch: slow });
    const { result } = renderHook(() => useLiveSessions({ client: slowClient, businessType: "venue", businessId: "ven_1" }));
    await waitFor(() => expect(result.current.status).toBe("live"));
    await waitFor(() => expect(answer).toBeDefined());
    await new Promise((r) => setTimeout(r, 50)); // the live session arrives meanwhile
    answer!();
    await waitFor(() => expect(result.current.data?.map((s) => s.id)).toEqual([5, 2, 1].map((n) => restSession(n).id)));
  });

  it("reports the server's code when the subscription is refused", async () => {
    const { client } = await setup(
      (r) => r.res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "unknown key", extensions: { code: "UNAUTHENTICATED" } }] })),
      () => page(1),
    );
    const { result } = renderHook(() => useLiveSessions({ client, businessType: "brand", businessId: "brd_1" }));
    await waitFor(() => expect(result.current.status).toBe("closed"));
    await waitFor(() => expect(result.current.isLoading).toBe(false));
    expect(result.current.error).toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    expect(result.current.data).toHaveLength(1);
  });

  it("reconnects after a drop: reconnecting with the error, then live again without it", async () => {
    let accept: (() => void) | undefined;
    const { srv, client } = await setup((r, n) => {
      if (n === 1) {
        // Held until the hook has shown the drop.
        accept = () => openStream(r);
        return;
      }
      openStream(r);
      if (n === 0) setTimeout(() => r.res.destroy(), 20);
    }, () => page(1));
    const { result } = renderHook(() => useLiveSessions({ client, businessType: "venue", businessId: "ven_1", retry: { initialDelayMs: 10 } }));
    await waitFor(() => expect(result.current.status).toBe("reconnecting"));
    expect(result.current.error).toMatchObject({ code: "network_error", willRetry: true });
    await waitFor(() => expect(accept).toBeDefined());
    accept!();
    await waitFor(() => expect(result.current.status).toBe("live"));
    expect(result.current.error).toBeUndefined();
    expect(srv.subscribes).toHaveLength(2);
  });

  it("resubscribes when the business changes, never mixing the two", async () => {
    const { srv, client } = await setup((r) => openStream(r), (r) => (r.url.pathname.includes("ven_2") ? page(9) : page(1)));
    const { result, rerender } = renderHook((p: { id: string }) => useLiveSessions({ client, businessType: "venue", businessId: p.id }), { initialProps: { id: "ven_1" } });
    await waitFor(() => expect(result.current.data?.[0]?.id).toBe(restSession(1).id));
    rerender({ id: "ven_2" });
    expect(result.current.data).toBeUndefined();
    await srv.subscribes[0]!.closed;
    await waitFor(() => expect(result.current.data?.[0]?.id).toBe(restSession(9).id));
    expect(srv.subscribes.map((r) => r.body.variables)).toEqual([{ venue: "ven_1" }, { venue: "ven_2" }]);
  });

  it("reports bad options as an error, not a crash", async () => {
    const { srv, client } = await setup((r) => openStream(r));
    const { result } = renderHook(() => useLiveSessions({ client, businessType: "shop" as never, businessId: "x" }));
    await waitFor(() => expect(result.current.isLoading).toBe(false));
    expect(result.current.status).toBe("closed");
    expect(result.current.error).toBeInstanceOf(TypeError);
    expect(srv.subscribes).toHaveLength(0);
  });

  it("ends the subscription on unmount and sets no state afterwards", async () => {
    const { srv, client } = await setup((r) => openStream(r), () => page(1));
    const errors = vi.spyOn(console, "error");
    const { result, unmount } = renderHook(() => useLiveSessions({ client, businessType: "venue", businessId: "ven_1" }));
    await waitFor(() => expect(result.current.status).toBe("live"));
    unmount();
    await srv.subscribes[0]!.closed;
    srv.subscribes[0]!.res.write(next(graphSession(2)));
    await new Promise((r) => setTimeout(r, 50));
    expect(srv.subscribes).toHaveLength(1);
    expect(errors).not.toHaveBeenCalled();
  });
});
