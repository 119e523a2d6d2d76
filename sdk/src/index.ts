// Vitola's business sessions feed: the recent public smoke sessions of a venue
// or a brand, for the business's own website; and, for servers, the verifying
// of Vitola's signed fulfillment callbacks. No runtime dependencies.

import { VitolaError } from "./errors";
import { subscribe, type SubscribeSessionsHandlers, type SubscribeSessionsOptions } from "./live";

export { CALLBACK_TOLERANCE_SECONDS, CallbackError, signCallback, verifyCallback } from "./callback";
export { LiveError, VitolaError } from "./errors";
export type { LiveStatus, RetryOptions, SubscribeSessionsHandlers, SubscribeSessionsOptions } from "./live";
export type { CallbackCrypto, CallbackErrorCode, CallbackEvent, CallbackEventType, VerifyCallbackOptions } from "./callback";

/** A business whose feed you read. */
export type BusinessType = "venue" | "brand";

/** The public summary of a session's user. */
export interface SessionUser {
  id?: string;
  /** Always present: see normalizeDisplayName. */
  displayName: string;
  avatarUrl: string | null;
}

/** The cigar of a session. */
export interface SessionCigar {
  id: string;
  name: string;
  brandName?: string;
  imageUrl?: string;
}

/** A public smoke session. Timestamps are RFC 3339 UTC with milliseconds. */
export interface Session {
  id: string;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  durationSeconds?: number;
  rating?: number;
  note?: string;
  featured?: boolean;
  user: SessionUser;
  cigar?: SessionCigar;
  venue?: { id: string; name: string };
}

/** What a page of the feed says about itself. */
export interface SessionsMeta {
  /** How many sessions match in all. */
  count: number;
  limit: number;
  offset: number;
}

export interface GetSessionsOptions {
  businessType: BusinessType;
  businessId: string;
  /** Sessions per page: 1 to 100 (default 20). */
  limit?: number;
  /** Sessions to skip. */
  offset?: number;
  /** Sessions created on or after (a date "2026-01-02" or a date-time). */
  from?: string | Date;
  /** Sessions created on or before (a date includes that whole day). */
  to?: string | Date;
  /** Only featured sessions. */
  featured?: boolean;
  /** Aborts the request. */
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** The API's base URL, e.g. https://api.vitola.example */
  baseUrl: string;
  /** A publishable key (vpk_…) for websites, or a secret key on a server. */
  apiKey: string;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

/** The label shown for a user with no name at all. */
export const ANONYMOUS_LABEL = "Vitola member";

/**
 * A user's display name: the display name; else the first name and the
 * initial of the last name ("Ana R."); else ANONYMOUS_LABEL.
 */
export function normalizeDisplayName(user: { displayName?: string | null; firstName?: string | null; lastName?: string | null }): string {
  const display = user.displayName?.trim();
  if (display) return display;
  const first = user.firstName?.trim();
  if (first) {
    const last = user.lastName?.trim();
    return last ? `${first} ${Array.from(last)[0]!.toUpperCase()}.` : first;
  }
  return ANONYMOUS_LABEL;
}

function iso(v: string | Date): string {
  return v instanceof Date ? v.toISOString() : v;
}

export interface VitolaClient {
  /** The sessions of one page of a business's feed. */
  getSessions(options: GetSessionsOptions): Promise<Session[]>;
  /** The sessions with the page's metadata. */
  getSessionsPage(options: GetSessionsOptions): Promise<{ data: Session[]; meta: SessionsMeta }>;
  /**
   * The business's new sessions as they start, until the returned function is
   * called: see subscribeSessions.
   */
  subscribeSessions(options: SubscribeSessionsOptions, handlers: SubscribeSessionsHandlers): () => void;
}

/** Makes a client for the API at baseUrl. */
export function createClient(options: ClientOptions): VitolaClient {
  const doFetch = options.fetch ?? globalThis.fetch;
  if (!doFetch) throw new Error("no fetch: pass one in createClient({ fetch })");
  if (!options.apiKey) throw new Error("createClient: apiKey is required");
  const base = options.baseUrl.replace(/\/+$/, "");

  async function getSessionsPage(o: GetSessionsOptions) {
    if (o.businessType !== "venue" && o.businessType !== "brand") {
      throw new TypeError(`businessType must be "venue" or "brand", not ${JSON.stringify(o.businessType)}`);
    }
    const params = new URLSearchParams();
    if (o.limit !== undefined) params.set("limit", String(o.limit));
    if (o.offset !== undefined) params.set("offset", String(o.offset));
    if (o.from !== undefined) params.set("from", iso(o.from));
    if (o.to !== undefined) params.set("to", iso(o.to));
    if (o.featured !== undefined) params.set("featured", String(o.featured));
    const query = params.toString();
    const url = `${base}/${o.businessType}s/${encodeURIComponent(o.businessId)}/sessions${query ? `?${query}` : ""}`;
    const res = await doFetch(url, { headers: { "x-service-key": options.apiKey, accept: "application/json" }, signal: o.signal });
    let body: any = null;
    try {
      body = await res.json();
    } catch {
      // not JSON: reported below
    }
    if (!res.ok) {
      throw new VitolaError(res.status, body?.error ?? "http_error", body?.message ?? `the API answered ${res.status}`);
    }
    if (!body || !Array.isArray(body.data)) {
      throw new VitolaError(res.status, "bad_response", "the API's answer has no data array");
    }
    const data: Session[] = body.data.map((s: any) => ({ ...s, user: { ...s.user, displayName: normalizeDisplayName(s.user ?? {}) } }));
    return { data, meta: body.meta as SessionsMeta };
  }

  return {
    getSessionsPage,
    getSessions: async (o) => (await getSessionsPage(o)).data,
    subscribeSessions: (o, handlers) =>
      subscribe(
        {
          base,
          apiKey: options.apiKey,
          fetch: doFetch,
          displayName: normalizeDisplayName,
          // The feed's page is at most 100 sessions: more missed than that
          // during one outage are not read back.
          getSince: async (from, signal) => (await getSessionsPage({ businessType: o.businessType, businessId: o.businessId, from, limit: 100, signal })).data,
        },
        o,
        handlers,
      ),
  };
}

/**
 * A business's new public sessions as they start (the graph's sessionStarted
 * subscription over GraphQL over SSE), each once, with reconnects and
 * back-off; returns the function that ends it. The same as
 * createClient(options).subscribeSessions(options, handlers).
 */
export function subscribeSessions(options: ClientOptions & SubscribeSessionsOptions, handlers: SubscribeSessionsHandlers): () => void {
  return createClient(options).subscribeSessions(options, handlers);
}
