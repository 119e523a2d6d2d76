import { describe, expect, it, vi } from "vitest";
import { ANONYMOUS_LABEL, createClient, normalizeDisplayName, VitolaError } from "../src/index";

function fakeFetch(status: number, body: unknown) {
  return vi.fn(async (_url: string, _init?: RequestInit) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } }));
}

const page = {
  data: [
    { id: "ses_1", createdAt: "2026-01-02T03:04:05.000Z", user: { id: "usr_1", displayName: "Ana Ruiz" }, cigar: { id: "cig_1", name: "Exclusivo", brandName: "Padrón" } },
    { id: "ses_2", createdAt: "2026-01-01T03:04:05.000Z", user: { id: "usr_2", displayName: "", firstName: "Ben", lastName: "okafor" } },
  ],
  meta: { count: 12, limit: 2, offset: 4 },
};

describe("normalizeDisplayName", () => {
  it.each([
    [{ displayName: "Ana Ruiz" }, "Ana Ruiz"],
    [{ displayName: "  ", firstName: "Ben", lastName: "okafor" }, "Ben O."],
    [{ firstName: "Chloé" }, "Chloé"],
    [{ firstName: "Éva", lastName: "élan" }, "Éva É."],
    [{}, ANONYMOUS_LABEL],
    [{ displayName: null, firstName: null, lastName: "X" }, ANONYMOUS_LABEL],
  ])("%o → %s", (user, want) => {
    expect(normalizeDisplayName(user)).toBe(want);
  });
});

describe("createClient", () => {
  it("asks for a page with the key and every option", async () => {
    const f = fakeFetch(200, page);
    const client = createClient({ baseUrl: "https://api.example/", apiKey: "vpk_x", fetch: f as unknown as typeof fetch });
    const controller = new AbortController();
    const res = await client.getSessionsPage({
      businessType: "venue", businessId: "ven_1", limit: 2, offset: 4, from: "2026-01-01", to: new Date("2026-01-31T00:00:00Z"), featured: true, signal: controller.signal,
    });
    const [url, init] = f.mock.calls[0]!;
    expect(url).toBe("https://api.example/venues/ven_1/sessions?limit=2&offset=4&from=2026-01-01&to=2026-01-31T00%3A00%3A00.000Z&featured=true");
    expect((init!.headers as Record<string, string>)["x-service-key"]).toBe("vpk_x");
    expect(init!.signal).toBe(controller.signal);
    expect(res.meta).toEqual({ count: 12, limit: 2, offset: 4 });
    expect(res.data.map((s) => s.user.displayName)).toEqual(["Ana Ruiz", "Ben O."]);
  });

  it("getSessions returns the sessions alone, for brands too", async () => {
    const f = fakeFetch(200, page);
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f as unknown as typeof fetch });
    const sessions = await client.getSessions({ businessType: "brand", businessId: "brd 1" });
    expect(f.mock.calls[0]![0]).toBe("https://api.example/brands/brd%201/sessions");
    expect(sessions).toHaveLength(2);
  });

  it("throws typed errors with status and code", async () => {
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: fakeFetch(404, { error: "business_not_found", message: "no venue" }) as unknown as typeof fetch });
    const err = await client.getSessions({ businessType: "venue", businessId: "ven_x" }).catch((e) => e);
    expect(err).toBeInstanceOf(VitolaError);
    expect(err).toMatchObject({ status: 404, code: "business_not_found", message: "no venue" });

    const html = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: (async () => new Response("<html>", { status: 502 })) as typeof fetch });
    await expect(html.getSessions({ businessType: "venue", businessId: "v" })).rejects.toMatchObject({ status: 502, code: "http_error" });
  });

  it("refuses bad input before any request", async () => {
    const f = fakeFetch(200, page);
    const client = createClient({ baseUrl: "https://api.example", apiKey: "k", fetch: f as unknown as typeof fetch });
    await expect(client.getSessions({ businessType: "shop" as never, businessId: "x" })).rejects.toThrow(TypeError);
    expect(f).not.toHaveBeenCalled();
    expect(() => createClient({ baseUrl: "x", apiKey: "" })).toThrow(/apiKey/);
  });
});
