// @vitest-environment jsdom
import { act, renderHook, waitFor } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { createClient } from "../src/index";
import { useSessions } from "../src/react";

// fetch that answers when told to, recording each request's abort signal.
function controlledFetch() {
  const calls: { url: string; signal: AbortSignal; resolve: (body: unknown) => void }[] = [];
  const f = vi.fn((url: string, init?: RequestInit) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init!.signal!;
      signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      calls.push({ url, signal, resolve: (body) => resolve(new Response(JSON.stringify(body), { status: 200 })) });
    }),
  );
  return { f: f as unknown as typeof fetch, calls };
}

const body = (id: string) => ({ data: [{ id, createdAt: "2026-01-02T03:04:05.000Z", user: { displayName: "Ana" } }], meta: { count: 1, limit: 20, offset: 0 } });

describe("useSessions", () => {
  it("loads, then shows the sessions", async () => {
    const { f, calls } = controlledFetch();
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f });
    const { result } = renderHook(() => useSessions({ client, businessType: "venue", businessId: "ven_1" }));
    expect(result.current.isLoading).toBe(true);
    await waitFor(() => expect(calls).toHaveLength(1));
    act(() => calls[0]!.resolve(body("ses_1")));
    await waitFor(() => expect(result.current.isLoading).toBe(false));
    expect(result.current.data?.[0]?.id).toBe("ses_1");
    expect(result.current.error).toBeUndefined();

    act(() => result.current.refetch());
    await waitFor(() => expect(calls).toHaveLength(2));
    act(() => calls[1]!.resolve(body("ses_2")));
    await waitFor(() => expect(result.current.data?.[0]?.id).toBe("ses_2"));
  });

  it("aborts when the options change and keeps only the newest answer", async () => {
    const { f, calls } = controlledFetch();
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f });
    const { result, rerender } = renderHook((p: { id: string }) => useSessions({ client, businessType: "venue", businessId: p.id }), { initialProps: { id: "ven_1" } });
    await waitFor(() => expect(calls).toHaveLength(1));
    rerender({ id: "ven_2" });
    await waitFor(() => expect(calls).toHaveLength(2));
    expect(calls[0]!.signal.aborted).toBe(true);
    act(() => calls[1]!.resolve(body("ses_of_ven_2")));
    await waitFor(() => expect(result.current.data?.[0]?.id).toBe("ses_of_ven_2"));
    expect(result.current.error).toBeUndefined();
  });

  it("never shows one business's sessions for another", async () => {
    const { f, calls } = controlledFetch();
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f });
    const { result, rerender } = renderHook((p: { id: string }) => useSessions({ client, businessType: "venue", businessId: p.id }), { initialProps: { id: "ven_1" } });
    await waitFor(() => expect(calls).toHaveLength(1));
    act(() => calls[0]!.resolve(body("ses_of_ven_1")));
    await waitFor(() => expect(result.current.data?.[0]?.id).toBe("ses_of_ven_1"));
    rerender({ id: "ven_2" });
    await waitFor(() => expect(calls).toHaveLength(2));
    expect(result.current.data).toBeUndefined();
    expect(result.current.isLoading).toBe(true);
  });

  it("aborts on unmount and sets no state afterwards", async () => {
    const { f, calls } = controlledFetch();
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f });
    const errors = vi.spyOn(console, "error");
    const { unmount } = renderHook(() => useSessions({ client, businessType: "brand", businessId: "brd_1" }));
    await waitFor(() => expect(calls).toHaveLength(1));
    unmount();
    expect(calls[0]!.signal.aborted).toBe(true);
    calls[0]!.resolve(body("late"));
    await new Promise((r) => setTimeout(r, 20));
    expect(errors).not.toHaveBeenCalled();
  });

  it("reports errors", async () => {
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: (async () => new Response(JSON.stringify({ error: "unauthorized", message: "bad key" }), { status: 401 })) as typeof fetch });
    const { result } = renderHook(() => useSessions({ client, businessType: "venue", businessId: "ven_1" }));
    await waitFor(() => expect(result.current.isLoading).toBe(false));
    expect(result.current.error).toMatchObject({ status: 401, code: "unauthorized" });
  });
});
