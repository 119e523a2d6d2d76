// useSessions: the feed in a React component; useLiveSessions: the feed, live. React is an optional peer
// dependency, needed only for this subpath.
import { useCallback, useEffect, useState } from "react";
import type { GetSessionsOptions, LiveStatus, Session, SubscribeSessionsOptions, VitolaClient } from "./index";

export interface UseSessionsOptions extends Omit<GetSessionsOptions, "signal"> {
  /** A client from createClient. */
  client: VitolaClient;
}

export interface UseSessionsResult {
  data: Session[] | undefined;
  isLoading: boolean;
  error: Error | undefined;
  /** Loads again (aborting a request in flight). */
  refetch: () => void;
}

/**
 * Loads a business's sessions, again whenever the options change. A request in
 * flight is aborted when the options change or the component unmounts, and no
 * state is set after unmounting.
 */
export function useSessions(options: UseSessionsOptions): UseSessionsResult {
  const { client, businessType, businessId, limit, offset, from, to, featured } = options;
  const fromKey = from instanceof Date ? from.toISOString() : from;
  const toKey = to instanceof Date ? to.toISOString() : to;
  // The options as one value: data loaded for other options is never shown
  // (a refetch keeps the current data while it loads).
  const key = JSON.stringify([businessType, businessId, limit, offset, fromKey, toKey, featured]);
  const [state, setState] = useState<{ key?: string; data?: Session[]; error?: Error; isLoading: boolean }>({ isLoading: true });
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ key, data: s.key === key ? s.data : undefined, isLoading: true }));
    // The cleanup aborts on option change and unmount, so an aborted signal
    // also means "unmounted": no state is set then.
    client
      .getSessions({ businessType, businessId, limit, offset, from: fromKey, to: toKey, featured, signal: controller.signal })
      .then((data) => {
        if (!controller.signal.aborted) setState({ key, data, isLoading: false });
      })
      .catch((error: Error) => {
        if (!controller.signal.aborted) setState((s) => ({ key, data: s.data, error, isLoading: false }));
      });
    return () => controller.abort();
  }, [client, key, generation]);

  const refetch = useCallback(() => setGeneration((g) => g + 1), []);
  return { data: state.data, isLoading: state.isLoading, error: state.error, refetch };
}


export interface UseLiveSessionsOptions extends Pick<GetSessionsOptions, "businessType" | "businessId" | "limit">, Pick<SubscribeSessionsOptions, "backfill" | "retry" | "idleTimeoutMs"> {
  /** A client from createClient. */
  client: VitolaClient;
  /** The most sessions kept, the newest (default: limit, else 20). */
  maxItems?: number;
}

export interface UseLiveSessionsResult {
  /** Newest first: the first page, then each new session on top. */
  data: Session[] | undefined;
  /** True until the first page is read. */
  isLoading: boolean;
  /** The first page's failure, else the live connection's latest (cleared when it is live again). */
  error: Error | undefined;
  /** The live connection: connecting, live, reconnecting, or closed after a failure no retry fixes. */
  status: LiveStatus;
}

// newest merges sessions into a list: each ID once, newest first, at most max.
function newest(add: Session[], list: Session[], max: number): Session[] {
  const seen = new Set<string>();
  const out = [...add, ...list].filter((s) => !seen.has(s.id) && seen.add(s.id));
  out.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  return out.slice(0, Math.max(1, max));
}

/**
 * A business's sessions, live: the first page from getSessions, then every new
 * session on top as it starts (subscribeSessions). It subscribes before
 * reading the page, so that nothing started in between is missed. Again
 * whenever the options change; the subscription ends on unmount.
 */
export function useLiveSessions(options: UseLiveSessionsOptions): UseLiveSessionsResult {
  const { client, businessType, businessId, limit, maxItems, backfill, retry, idleTimeoutMs } = options;
  const key = JSON.stringify([businessType, businessId, limit, maxItems, backfill, retry, idleTimeoutMs]);
  type State = { key: string; data?: Session[]; pageError?: Error; liveError?: Error; isLoading: boolean; status: LiveStatus };
  const [state, setState] = useState<State>({ key, isLoading: true, status: "connecting" });

  useEffect(() => {
    const controller = new AbortController();
    const max = maxItems ?? limit ?? 20;
    // The effect's own copy: live sessions wait here until the page is read.
    let data: Session[] | undefined;
    let pending: Session[] = [];
    // Nothing is set once the effect is cleaned up (options changed, unmount).
    const publish = (patch: Partial<State>) => {
      if (!controller.signal.aborted) setState((s) => ({ ...(s.key === key ? s : { isLoading: true, status: "connecting" }), ...patch, key }));
    };
    setState({ key, isLoading: true, status: "connecting" });
    // The signal ends the subscription on cleanup. Bad options throw: shown
    // as the error, as the page's request reports them.
    try {
      client.subscribeSessions(
        { businessType, businessId, backfill, retry, idleTimeoutMs, signal: controller.signal },
        {
          onSession: (s) => {
            if (!data) pending.push(s);
            else publish({ data: (data = newest([s], data, max)) });
          },
          onError: (liveError) => publish({ liveError }),
          onStatus: (status) => publish(status === "live" ? { status, liveError: undefined } : { status }),
        },
      );
    } catch (liveError) {
      publish({ liveError: liveError as Error, status: "closed" });
    }
    client
      .getSessions({ businessType, businessId, limit, signal: controller.signal })
      .then(
        (page) => publish({ data: (data = newest(pending, page, max)), isLoading: false }),
        // The live sessions still show when the page cannot be read.
        (pageError: Error) => publish({ data: (data = newest(pending, [], max)), pageError, isLoading: false }),
      )
      .finally(() => (pending = []));
    return () => controller.abort();
    // key stands for the options it is made of (retry is an object).
  }, [client, key]);

  const current = state.key === key ? state : { isLoading: true, status: "connecting" as const, data: undefined, pageError: undefined, liveError: undefined };
  return { data: current.data, isLoading: current.isLoading, error: current.pageError ?? current.liveError, status: current.status };
}

export type { LiveStatus, Session, VitolaClient } from "./index";
