import { defineConfig } from "vitest/config";

// Timeouts are bounds for a machine busy with other work, at least ten times a
// quiet run's duration, never a speed test: a unit test takes milliseconds
// (60 s), a hook that packs and installs the SDK about 20 s (10 min).
export default defineConfig({
  test: {
    include: ["test/**/*.test.{ts,tsx}"],
    testTimeout: 60_000,
    hookTimeout: 600_000,
  },
});
