// Drives Debian's chromium (playwright-core) through the hosted checkout page
// that the payments origin serves. Run by platform/checkout_browser_test.go,
// which creates the sessions through the trusted API and checks the outcome
// afterwards. CHECKOUT_PLAN is JSON:
//   artifacts  a folder for the screenshots
//   shop       the client's registered origin (serves /frame, /paid, /cancelled)
//   stranger   an origin the client did not register (serves /frame too)
//   cases      {name: {url, returnUrl, cancelUrl}}: the cases to run, each with
//              its session's one-time link
// Prints one JSON line: what the browser saw in each case, the screenshots,
// and any script error of the page.
import { launch, report } from "./chromium.mjs";
import path from "node:path";

const plan = JSON.parse(process.env.CHECKOUT_PLAN);
// Third-party cookies blocked, as browsers are going: the checkout must work
// in a registered site's iframe through its Partitioned cookie alone.
const browser = await launch(["--test-third-party-cookie-phaseout"]);
const result = { cases: {}, screenshots: [], pageErrors: [] };
const T = 15000;

const phone = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const desktop = { viewport: { width: 1024, height: 860 } };

let lastPage = null; // for a screenshot of a case that failed

async function newPage(options) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  lastPage = page;
  const errors = [];
  page.on("pageerror", (e) => result.pageErrors.push(String(e)));
  page.on("console", (m) => errors.push(m.text()));
  page.consoleMessages = errors;
  return page;
}

async function shot(page, name) {
  const file = path.join(plan.artifacts, name + ".png");
  await page.screenshot({ path: file, fullPage: true });
  result.screenshots.push(file);
}

// view waits until the checkout (in page or frame) shows a view.
const view = (scope, name) => scope.locator('[data-view="' + name + '"]:not([hidden])').waitFor({ timeout: T });

// settled waits until the checkout has loaded and returns the view it shows.
async function settled(scope) {
  const shown = scope.locator('[data-view]:not([hidden]):not([data-view="loading"])');
  await shown.waitFor({ timeout: T });
  return shown.getAttribute("data-view");
}

// tabTo presses Tab until the focus is on selector: the element is reachable
// from the keyboard, in the page's own order.
async function tabTo(page, selector) {
  for (let i = 0; i < 25; i++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) {
      return;
    }
  }
  throw new Error("Tab never reached " + selector);
}

// addCard fills the card form by its labels and saves the card.
async function addCard(scope, number, expiry, cvc, name) {
  await scope.getByLabel("Card number").fill(number);
  await scope.getByLabel("Expiry date").fill(expiry);
  await scope.getByLabel("Security code").fill(cvc);
  if (name) {
    await scope.getByLabel("Name on card").fill(name);
  }
  await scope.getByRole("button", { name: "Save card" }).click();
}

const alertText = (scope) => scope.getByRole("alert").textContent();
const waitAlert = (scope, pattern) =>
  scope.getByRole("alert").filter({ hasText: pattern }).waitFor({ timeout: T });
const cardFieldsEmpty = (scope) =>
  scope.locator("#cc-number, #cc-csc").evaluateAll((els) => els.every((e) => e.value === ""));

const cases = {
  // The happy path at the top level, with the keyboard alone.
  async top(c) {
    const page = await newPage(desktop);
    const facts = {};
    await page.goto(c.url);
    await view(page, "checkout");
    facts.hashAfterLoad = await page.evaluate(() => location.hash);
    facts.offer = await page.locator('[data-field="offerName"]').textContent();
    facts.quantity = await page.locator('[data-field="quantity"]').textContent();
    facts.price = await page.locator('[data-field="price"]').textContent();
    facts.focusAfterLoad = await page.evaluate(() => document.activeElement.id);
    await shot(page, "01-top-loaded");

    // A reload has no token any more: the cookie brings the session back.
    await page.reload();
    await view(page, "checkout");
    facts.afterReload = await page.locator('[data-field="offerName"]').textContent();
    // The link opened again in this browser: the token is spent, but the
    // browser's own cookie still holds the session.
    const again = await page.context().newPage();
    await again.goto(c.url);
    await view(again, "checkout");
    facts.linkAgainSameBrowser = await again.locator('[data-field="offerName"]').textContent();
    await again.close();

    await tabTo(page, "#cc-number");
    await page.keyboard.type("4242 4242 4242 4242");
    await tabTo(page, "#cc-exp");
    await page.keyboard.type("12/34");
    await tabTo(page, "#cc-csc");
    await page.keyboard.type("123");
    await tabTo(page, "#cc-name");
    await page.keyboard.type("Ada Buyer");
    await page.keyboard.press("Enter"); // submits the form
    await page.locator("#method-list li").first().waitFor({ timeout: T });
    await page.getByRole("status").filter({ hasText: "was saved" }).waitFor({ timeout: T });
    facts.savedCard = await page.locator("#method-list label").first().textContent();
    facts.status = await page.getByRole("status").textContent();
    facts.fieldsClearedAfterPost = await cardFieldsEmpty(page);
    await tabTo(page, "#pay");
    facts.payFocusOutline = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement);
      return s.outlineStyle + " " + s.outlineWidth;
    });
    facts.payLabel = await page.locator("#pay").textContent();
    await shot(page, "02-top-card-saved-pay-focused");
    await page.keyboard.press("Enter");
    await view(page, "done");
    facts.done = await page.locator('[data-view="done"]').innerText();
    await shot(page, "03-top-paid");
    await page.waitForURL(c.returnUrl, { timeout: T });
    facts.landedOn = page.url();
    await shot(page, "04-top-returned");
    await page.context().close();
    return facts;
  },

  // The same inside an iframe of the client's registered origin: a
  // third-party context, where the Partitioned cookie carries the session.
  async frame(c) {
    const page = await newPage(desktop);
    await page.goto(plan.shop + "/frame?src=" + encodeURIComponent(c.url));
    const frame = page.frameLocator("iframe");
    const facts = { view: await settled(frame) };
    await shot(page, "05-frame-loaded");
    if (facts.view !== "checkout") {
      return facts; // "blocked": the browser dropped the cookie
    }
    facts.offer = await frame.locator('[data-field="offerName"]').textContent();
    await addCard(frame, "5555 5555 5555 4444", "0433", "321");
    await frame.getByRole("status").filter({ hasText: "was saved" }).waitFor({ timeout: T });
    facts.savedCard = await frame.locator("#method-list label").first().textContent();
    await frame.getByRole("button", { name: /^Pay / }).click();
    await view(frame, "done");
    await shot(page, "06-frame-paid");
    const child = page.mainFrame().childFrames()[0];
    await child.waitForURL(c.returnUrl, { timeout: T });
    facts.frameLandedOn = child.url();
    facts.topStayedOn = page.url();
    await shot(page, "07-frame-returned");
    await page.context().close();
    return facts;
  },

  // Declines, on a phone: a card refused when saved, a card declined when
  // charged, then another card pays.
  async declined(c) {
    const page = await newPage(phone);
    await page.goto(c.url);
    await view(page, "checkout");
    const facts = {};
    facts.layout = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: innerWidth,
      smallestInputFont: Math.min(...[...document.querySelectorAll("input[type=text]")].map((e) => parseFloat(getComputedStyle(e).fontSize))),
    }));
    await shot(page, "08-phone-loaded");

    await addCard(page, "4000 0000 0000 0002", "12/34", "123");
    await waitAlert(page, "declined");
    facts.saveDeclined = await alertText(page);
    facts.fieldsClearedAfterDecline = await cardFieldsEmpty(page);
    facts.cardsAfterSaveDecline = await page.locator("#method-list li").count();
    await shot(page, "09-phone-declined-when-saved");

    // A wrong expiry is the form's own announced error, sent nowhere.
    await addCard(page, "4000 0000 0000 9995", "13/34", "123");
    await waitAlert(page, "expiry");
    facts.badExpiry = await alertText(page);
    facts.badExpiryInvalid = await page.getByLabel("Expiry date").getAttribute("aria-invalid");
    await shot(page, "10-phone-invalid-expiry");
    await page.getByLabel("Expiry date").fill("12/34");
    await page.getByRole("button", { name: "Save card" }).click();
    await page.getByRole("status").filter({ hasText: "was saved" }).waitFor({ timeout: T });
    await page.getByRole("button", { name: /^Pay / }).click();
    await waitAlert(page, "insufficient funds");
    facts.chargeDeclined = await alertText(page);
    await shot(page, "11-phone-declined-at-pay");

    await addCard(page, "4242424242424242", "12/34", "123");
    await page.getByRole("status").filter({ hasText: "was saved" }).waitFor({ timeout: T });
    facts.cards = await page.locator("#method-list label").allInnerTexts();
    // The buttons' names say which card they act on.
    await page.getByRole("button", { name: "Make default Visa ending in 4242" }).click();
    await page.getByRole("status").filter({ hasText: "is now your default card" }).waitFor({ timeout: T });
    await page.getByRole("button", { name: "Remove Visa ending in 9995" }).click();
    await page.getByRole("status").filter({ hasText: "was removed" }).waitFor({ timeout: T });
    facts.cardsAfterRemove = await page.locator("#method-list label").allInnerTexts();
    facts.selected = await page.locator('input[name="method"]:checked + label').innerText();
    await shot(page, "12-phone-other-card-default");
    await page.getByRole("button", { name: /^Pay / }).click();
    await view(page, "done");
    await page.waitForURL(c.returnUrl, { timeout: T });
    facts.landedOn = page.url();
    await page.context().close();
    return facts;
  },

  // The gateway's answer is lost: the page says the payment is processing
  // and keeps asking (the reconciler settles it 30 s later, beyond the test).
  async pending(c) {
    const page = await newPage(desktop);
    await page.goto(c.url);
    await view(page, "checkout");
    await addCard(page, "4000 0000 0000 0119", "12/34", "123");
    await page.getByRole("status").filter({ hasText: "was saved" }).waitFor({ timeout: T });
    await page.getByRole("button", { name: /^Pay / }).click();
    await view(page, "processing");
    const facts = { text: await page.locator('[data-view="processing"]').innerText(), status: await page.getByRole("status").textContent() };
    await shot(page, "13-processing");
    await page.context().close();
    return facts;
  },

  // An expired link and a link another browser used.
  async expired(c) {
    return unavailable(c, "14-expired-link");
  },
  async used(c) {
    return unavailable(c, "15-used-link");
  },

  async cancelled(c) {
    const page = await newPage(desktop);
    await page.goto(c.url);
    await view(page, "checkout");
    await page.getByRole("button", { name: "Cancel and go back" }).click();
    await page.waitForURL(c.cancelUrl, { timeout: T });
    const facts = { landedOn: page.url() };
    await shot(page, "16-cancelled-returned");
    await page.context().close();
    return facts;
  },

  // A page of an origin the client did not register frames the checkout:
  // the browser refuses it (CSP frame-ancestors), so nothing of the page
  // loads and its script never redeems the token.
  async stranger(c) {
    const page = await newPage(desktop);
    const loaded = page.waitForEvent("console", { predicate: (m) => m.text().includes("frame-ancestors"), timeout: T });
    await page.goto(plan.stranger + "/frame?src=" + encodeURIComponent(c.url));
    const facts = { console: (await loaded).text() };
    const child = page.mainFrame().childFrames()[0];
    facts.frameURL = child.url();
    facts.checkoutElements = await child.locator("#main").count().catch(() => -1);
    await shot(page, "17-stranger-frame-refused");
    await page.context().close();
    return facts;
  },
};

async function unavailable(c, name) {
  const page = await newPage(desktop);
  await page.goto(c.url);
  await view(page, "unavailable");
  const facts = {
    text: await page.locator('[data-view="unavailable"]').innerText(),
    focus: await page.evaluate(() => document.activeElement.textContent),
    hash: await page.evaluate(() => location.hash),
  };
  await shot(page, name);
  await page.context().close();
  return facts;
}

try {
  for (const [name, c] of Object.entries(plan.cases)) {
    const started = Date.now();
    try {
      result.cases[name] = await cases[name](c);
    } catch (e) {
      result.cases[name] = { error: String(e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e) };
      if (lastPage && !lastPage.isClosed()) {
        await shot(lastPage, "failed-" + name).catch(() => {});
        await lastPage.context().close();
      }
    }
    result.cases[name].ms = Date.now() - started;
  }
} finally {
  await browser.close();
}
report(result);
