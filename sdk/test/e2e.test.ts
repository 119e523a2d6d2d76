// Against the real Go server on loopback: `go test ./sdk` starts one and runs
// this with VITOLA_SDK_E2E_URL, _KEY and _VENUE set.
import { describe, expect, it } from "vitest";
import { createClient, VitolaError } from "../src/index";

const url = process.env.VITOLA_SDK_E2E_URL;

// describe bodies run even when skipped, so the client is made lazily.
const client = () => createClient({ baseUrl: url!, apiKey: process.env.VITOLA_SDK_E2E_KEY! });
const venue = process.env.VITOLA_SDK_E2E_VENUE!;

describe.runIf(url)("against the Go server", () => {
  it("reads a venue's feed with its metadata", async () => {
    const { data, meta } = await client().getSessionsPage({ businessType: "venue", businessId: venue, limit: 5 });
    expect(data).toHaveLength(5);
    expect(meta.count).toBeGreaterThanOrEqual(10);
    for (const s of data) {
      expect(s.user.displayName).not.toBe("");
      // Always there: null when the user has no avatar.
      expect(s.user).toHaveProperty("avatarUrl");
      expect(s.user.avatarUrl === null || typeof s.user.avatarUrl === "string").toBe(true);
      expect(s.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const featured = await client().getSessions({ businessType: "venue", businessId: venue, featured: true, limit: 100 });
    expect(featured.every((s) => s.featured)).toBe(true);
  });

  it("reports an unknown venue as a typed 404", async () => {
    const err = await client().getSessions({ businessType: "venue", businessId: "ven_0000000000000000" }).catch((e) => e);
    expect(err).toBeInstanceOf(VitolaError);
    expect(err).toMatchObject({ status: 404, code: "business_not_found" });
  });
});
