// Opens GraphiQL's Docs pane (the Documentation Explorer) on the Go server's
// page and reads what it shows (platform/schema_docs_test.go):
//   GRAPHIQL_URL    the page (/graphql) on this machine's loopback
//   GRAPHIQL_KEY    a developer key to type into the page's key field
//   GRAPHIQL_PAGES  comma-separated pages to open: a type (`Cigar`) or a
//                   field of one (`Query.searchCigars`, which lists its
//                   arguments)
// Prints one JSON line: {pages: {"Cigar": "the text the pane shows"}, pageErrors}.
import { launch, report } from "./chromium.mjs";

const browser = await launch();
const pageErrors = [];
const pane = ".graphiql-doc-explorer";
const exact = (s) => new RegExp(`^${s}$`);
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(process.env.GRAPHIQL_URL);
  await page.waitForSelector(".graphiql-container", { timeout: 20000 });
  await page.fill("#vitola-key-input", process.env.GRAPHIQL_KEY);
  await page.click("#vitola-key button[type=submit]");
  await page.click('button[aria-label="Show Documentation Explorer"]');
  // The root page links the query root type once the schema has loaded.
  await page.waitForSelector(`${pane} a.graphiql-doc-explorer-type-name`, { timeout: 20000 });
  const title = async (name) =>
    page.waitForSelector(`${pane} .graphiql-doc-explorer-title:text-is("${name}")`, { timeout: 10000 });
  const pages = {};
  for (const want of process.env.GRAPHIQL_PAGES.split(",")) {
    const [type, field] = want.split(".");
    // Back to the explorer's first page, whose search finds types (a type's
    // page searches its own fields first), then search for the type and open
    // it, as a reader would.
    while (await page.locator(`${pane} .graphiql-doc-explorer-back`).count()) {
      await page.click(`${pane} .graphiql-doc-explorer-back`);
    }
    await page.fill(`${pane} .graphiql-doc-explorer-search-input input`, type);
    await page.locator(`${pane} [role="option"]`, { hasText: exact(type) }).first().click({ timeout: 10000 });
    await title(type);
    if (field) {
      await page.locator(`${pane} a.graphiql-doc-explorer-field-name`, { hasText: exact(field) }).first().click({ timeout: 10000 });
      await title(field);
    }
    pages[want] = await page.innerText(`${pane} .graphiql-doc-explorer-content`);
  }
  report({ pages, pageErrors });
} finally {
  await browser.close();
}
