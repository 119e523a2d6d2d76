// Drives Debian's chromium (playwright-core) through the website widget that the
// Go server serves under /examples/widget/. Run by examples/examples_test.go:
//   WIDGET_ALLOWED  a widget URL on an origin the publishable key lists
//   WIDGET_REFUSED  the same widget on an origin the key does not list
// Prints one JSON line with what the browser saw.
import { launch, report } from "./chromium.mjs";

const browser = await launch();
try {
  const page = await browser.newPage();
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(String(e)));

  await page.goto(process.env.WIDGET_ALLOWED);
  await page.waitForSelector("li.vitola-session", { timeout: 20000 });
  const allowed = {
    users: await page.locator("li.vitola-session .user").allTextContents(),
    cigars: await page.locator("li.vitola-session .cigar").allTextContents(),
    status: await page.locator(".status").textContent(),
  };

  await page.goto(process.env.WIDGET_REFUSED);
  await page.waitForSelector(".status.error", { timeout: 20000 });
  const refused = {
    sessions: await page.locator("li.vitola-session").count(),
    status: await page.locator(".status").textContent(),
  };
  report({ allowed, refused, pageErrors: consoleErrors });
} finally {
  await browser.close();
}
