// Drives Debian's chromium (playwright-core) through the GraphiQL page of the
// Go server (webui, platform/graphiql_browser_test.go):
//   GRAPHIQL_URL  the page on this machine's loopback (make run's --demo)
//   GRAPHIQL_KEY  a developer key to type into its key field
// Prints one JSON line with what the browser saw.
import { launch, report } from "./chromium.mjs";

const browser = await launch();
const pageErrors = [];

// open loads the page in a fresh context and watches its GraphQL requests.
async function open(context) {
  const page = await context.newPage();
  const seen = { posts: 0, schemas: 0, refusals: [] };
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/.test(m.text())) pageErrors.push(m.text());
  });
  page.on("response", async (res) => {
    if (res.request().method() !== "POST" || !res.url().endsWith("/graphql")) return;
    seen.posts++;
    const body = await res.text().catch(() => "");
    if (res.status() === 200 && body.includes('"__schema"')) seen.schemas++;
    else seen.refusals.push(res.status() + " " + body.slice(0, 200));
  });
  await page.goto(process.env.GRAPHIQL_URL);
  await page.waitForSelector(".graphiql-container", { timeout: 20000 });
  return { page, seen };
}

// settle waits until GraphiQL has had time to fetch its schema.
async function settle(page, seen, want) {
  for (let i = 0; i < 100 && seen.schemas < want; i++) await page.waitForTimeout(100);
  await page.waitForTimeout(300);
}

const field = "#vitola-key-input";
try {
  // 1. On this machine, in demo: the key is filled in and the schema loads.
  const demoContext = await browser.newContext();
  const d = await open(demoContext);
  await settle(d.page, d.seen, 1);
  const demo = {
    value: await d.page.inputValue(field),
    schemas: d.seen.schemas,
    refusals: d.seen.refusals,
    note: await d.page.textContent("#vitola-key-note"),
    missingKeyShown: (await d.page.content()).includes("missing x-service-key"),
  };
  await demoContext.close();

  // 2. Through a proxy (no demo key): an empty field, no request until a key
  // is given; the key given is kept across a reload, until forgotten.
  const context = await browser.newContext({ extraHTTPHeaders: { "X-Forwarded-For": "203.0.113.7" } });
  const p = await open(context);
  await p.page.waitForTimeout(1500);
  const proxied = {
    valueBefore: await p.page.inputValue(field),
    postsBefore: p.seen.posts,
    hintShown: (await p.page.content()).includes("Enter your developer key"),
  };
  await p.page.fill(field, process.env.GRAPHIQL_KEY);
  await p.page.click("#vitola-key button[type=submit]");
  await settle(p.page, p.seen, 1);
  proxied.schemasAfterUse = p.seen.schemas;
  await p.page.close();

  const again = await open(context);
  await settle(again.page, again.seen, 1);
  proxied.valueAfterReload = await again.page.inputValue(field);
  proxied.schemasAfterReload = again.seen.schemas;
  await again.page.click("#vitola-key-forget");
  await again.page.close();

  const forgotten = await open(context);
  await forgotten.page.waitForTimeout(500);
  proxied.valueAfterForget = await forgotten.page.inputValue(field);
  await context.close();

  report({ demo, proxied, pageErrors });
} finally {
  await browser.close();
}
