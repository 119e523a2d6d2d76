// useSessions: the feed in a React component. React is an optional peer
// dependency, needed only for this subpath.
import { useCallback, useEffect, useState } from "react";
import type { GetSessionsOptions, Session, VitolaClient } from "./index";

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

export type { Session, VitolaClient } from "./index";
