// A consumer of the published @vitola/sdk: run.mjs copies this file into the
// CommonJS project (cjs/, compiled to require()) and into the ESM project
// (esm/, compiled to import), so the same code goes through both halves of the
// package's exports. It reads a venue's feed from the server named by the
// environment and prints what it saw as one JSON line.
import { createClient, LiveError, subscribeSessions, VitolaError, type GetSessionsOptions, type LiveStatus, type Session, type SubscribeSessionsHandlers } from "@vitola/sdk";
import { useLiveSessions, useSessions, type UseLiveSessionsOptions, type UseLiveSessionsResult, type UseSessionsOptions, type UseSessionsResult } from "@vitola/sdk/react";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through sdk/test/consumers/run.mjs`);
  return value;
}

async function main(): Promise<void> {
  const origin = env("VITOLA_CONSUMER_ORIGIN");
  const vitola = createClient({
    baseUrl: env("VITOLA_CONSUMER_URL"),
    apiKey: env("VITOLA_CONSUMER_KEY"),
    // A publishable key answers only the origins it lists. A browser sends
    // Origin itself; this program stands in for a page of that site.
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("origin", origin);
      return fetch(input, { ...init, headers });
    },
  });
  const options: GetSessionsOptions = { businessType: "venue", businessId: env("VITOLA_CONSUMER_VENUE"), limit: 3 };
  const sessions: Session[] = await vitola.getSessions(options);
  const missing: unknown = await vitola.getSessions({ ...options, businessId: "ven_0000000000000000" }).then(
    () => "no error",
    (err: unknown) => err,
  );
  // The hook's types (calling it needs a React renderer).
  const hook: (o: UseSessionsOptions) => UseSessionsResult = useSessions;
  const liveHook: (o: UseLiveSessionsOptions) => UseLiveSessionsResult = useLiveSessions;
  // The live API's types: a status, and an error that says whether it retries.
  const handlers: SubscribeSessionsHandlers = {
    onSession: (s: Session) => void s.id,
    onStatus: (status: LiveStatus) => void status,
    onError: (err: LiveError) => void (err.willRetry && err instanceof VitolaError),
  };
  console.log(
    JSON.stringify({
      sessions: sessions.map((s) => ({ id: s.id, user: s.user.displayName, createdAt: s.createdAt })),
      notFound: missing instanceof VitolaError ? { status: missing.status, code: missing.code } : String(missing),
      useSessions: typeof hook,
      useLiveSessions: typeof liveHook,
      subscribeSessions: [typeof subscribeSessions, typeof vitola.subscribeSessions, typeof handlers.onSession].join(","),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
