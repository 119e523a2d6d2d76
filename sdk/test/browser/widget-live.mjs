// Drives Debian's chromium (playwright-core) through the website widget in live
// mode: the page loads its first sessions, then a session is started through
// the API (POST /v1/me/sessions, from here, as a user's app would) and the
// widget must show it without reloading. Run by platform/live_widget_test.go:
//   WIDGET_URL    the widget page (with live=true)
//   START_URL     the write route, on another replica than the page's API
//   START_HEADERS its headers as JSON (the developer key, the user's token)
//   START_BODY    the session to start, JSON; its cigarId is filled in with a
//                 cigar of the venue's feed (START_FEED, read with START_HEADERS)
// Prints one JSON line: what the page showed, the new session's ID and how
// long it took from the POST to the session on the page.
import { launch, report } from "./chromium.mjs";

const browser = await launch();
try {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(process.env.WIDGET_URL);
  try {
    await page.waitForSelector("li.vitola-session", { timeout: 20000 });
    await page.waitForSelector('.vitola-sessions[data-live-status="live"]', { timeout: 20000 });
  } catch (err) {
    const status = await page.locator(".status").textContent();
    const live = await page.locator(".vitola-sessions").getAttribute("data-live-status");
    report({ error: `the widget did not load live (status ${JSON.stringify(status)}, live ${live}): ${err.message.split("\n")[0]}`, pageErrors });
    process.exit(0);
  }
  // The router answers a subscription before its upstream one to the users
  // subgraph is in place (the engine starts it asynchronously): a session
  // started in that instant would not be delivered.
  await new Promise((r) => setTimeout(r, 500));
  // Loads of the page from here on: there must be none.
  let navigations = 0;
  page.on("framenavigated", (f) => f === page.mainFrame() && navigations++);
  const before = await page.locator("li.vitola-session").count();
  // The moment each session's row appears, by the page's clock (this machine's).
  await page.evaluate(() => {
    window.__seen = {};
    new MutationObserver(() => {
      for (const li of document.querySelectorAll("li.vitola-session")) window.__seen[li.dataset.id] ??= Date.now();
    }).observe(document.querySelector(".list"), { childList: true });
  });

  const headers = JSON.parse(process.env.START_HEADERS);
  const feed = await (await fetch(process.env.START_FEED, { headers })).json();
  const body = JSON.stringify({ ...JSON.parse(process.env.START_BODY), cigarId: feed.data.find((s) => s.cigar)?.cigar.id });
  const startedAt = Date.now();
  const res = await fetch(process.env.START_URL, { method: "POST", headers, body });
  const created = await res.json();
  const id = created?.data?.id ?? created?.id;
  let shownAt = null;
  let error = res.ok && id ? null : `POST ${res.status}: ${JSON.stringify(created)}`;
  if (!error) {
    try {
      await page.waitForSelector(`li.vitola-session[data-id="${id}"]`, { timeout: 10000 });
      shownAt = await page.evaluate((id) => window.__seen[id], id);
    } catch (err) {
      error = `not shown within 10 s: ${err.message.split("\n")[0]}`;
    }
  }
  report({
    id,
    before,
    after: await page.locator("li.vitola-session").count(),
    first: (await page.locator("li.vitola-session").first().getAttribute("data-id")) ?? "",
    elapsedMs: shownAt ? shownAt - startedAt : -1,
    status: await page.locator(".status").textContent(),
    liveStatus: await page.locator(".vitola-sessions").getAttribute("data-live-status"),
    navigations,
    error,
    pageErrors,
  });
} finally {
  await browser.close();
}
