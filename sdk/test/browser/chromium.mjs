// Starts Debian's chromium through playwright-core for the browser tests
// (`npx playwright install` cannot download a browser here). CHROMIUM names
// another binary.
import { chromium } from "playwright-core";

export function launch(args = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", ...args],
  });
}

// report prints the one JSON line the Go test reads (sdktest.RunBrowser).
export function report(result) {
  console.log(JSON.stringify(result));
}
