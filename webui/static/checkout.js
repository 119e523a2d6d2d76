// The hosted checkout page (package webui): redeems the payment link's
// one-time token, shows the offer, saved cards and a card form, and pays.
// Plain JavaScript with no dependencies, loaded from this origin only (the
// page's CSP allows nothing else). It talks to the payments API on this same
// origin; the API keeps every rule, this script only shows them.
//
// Card data: the card form's values go into one request to the card route
// (/api/pci/v1/payment-methods) and the fields are cleared as soon as it is
// sent. Nothing here logs, stores or keeps them.
(() => {
  "use strict";

  const API = "/api/v1";
  const PCI = "/api/pci/v1/payment-methods";
  const CURRENT = API + "/payment-sessions/current";

  const $ = (id) => document.getElementById(id);
  const field = (name) => document.querySelector('[data-field="' + name + '"]');

  // The session this page is for: /checkout/{id}.
  const pageSession = decodeURIComponent(location.pathname.split("/").pop() || "");

  // The token rides in the fragment (never sent to a server). Take it and
  // remove it from the address at once, so it is not kept in the history,
  // shared, bookmarked or seen by anyone looking at the screen.
  const token = (() => {
    if (location.hash.length < 2) {
      return "";
    }
    const t = new URLSearchParams(location.hash.slice(1)).get("token") || "";
    history.replaceState(null, "", location.pathname + location.search);
    return t;
  })();

  let session = null; // the HostedSession shown
  let busy = false; // a request of the buyer's is running

  // api calls the payments API on this origin and returns {status, body}
  // (body: the parsed JSON, or null). It throws only when the network fails.
  async function api(method, path, body, headers) {
    const init = {
      method,
      headers: Object.assign({ Accept: "application/json" }, headers),
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error",
    };
    if (method !== "GET") {
      // A header another site's page cannot send without asking first (the
      // API never allows that): the API's CSRF check.
      init.headers["X-Vitola-Checkout"] = "1";
    }
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let parsed = null;
    if (res.status !== 204) {
      try {
        parsed = await res.json();
      } catch (e) {
        parsed = null;
      }
    }
    return { status: res.status, body: parsed };
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // --- Announcements -----------------------------------------------------

  // announce says something politely (role=status); error interrupts
  // (role=alert). Each is cleared first so that the same words are read
  // again when they repeat.
  function say(box, text) {
    clearTimeout(box.pending);
    box.textContent = "";
    if (text) {
      // A moment later, so the region is seen to change (a timer, not an
      // animation frame: those wait while a tab or frame is hidden).
      box.pending = setTimeout(() => {
        box.textContent = text;
      }, 30);
    }
  }
  const announce = (text) => say($("status"), text);
  const showError = (text) => {
    announce("");
    say($("alert"), text);
  };
  const clearError = () => say($("alert"), "");

  // sentence makes an API message a sentence: capitalized, with a full stop.
  function sentence(text) {
    text = String(text || "").trim();
    if (!text) {
      return "";
    }
    text = text.charAt(0).toUpperCase() + text.slice(1);
    return /[.!?]$/.test(text) ? text : text + ".";
  }

  function messageOf(res, fallback) {
    return sentence((res && res.body && res.body.message) || fallback);
  }

  // --- Views -------------------------------------------------------------

  function show(view, focusHeading) {
    for (const s of document.querySelectorAll("[data-view]")) {
      s.hidden = s.dataset.view !== view;
    }
    $("main").setAttribute("aria-busy", "false");
    $("main").dataset.shown = view;
    if (focusHeading) {
      const h = view === "checkout" ? $("title") : document.querySelector('[data-view="' + view + '"] h2');
      if (h) {
        h.tabIndex = -1;
        h.focus();
      }
    }
  }

  // safeURL returns an http(s) URL the API gave, or "" (never a javascript:
  // or data: URL, whatever the data says).
  function safeURL(u) {
    try {
      const parsed = new URL(u);
      const scheme = parsed.protocol.slice(0, -1);
      return scheme === "https" || scheme === "http" ? parsed.href : "";
    } catch (e) {
      return "";
    }
  }

  // leave goes to the merchant's URL. In a frame this navigates the frame
  // itself, never the page around it (README: Hosted checkout). replace:
  // the back button does not return to a checkout that is over.
  function leave(url, delay) {
    url = safeURL(url);
    if (url) {
      setTimeout(() => location.replace(url), delay);
    }
  }

  function setLink(name, url) {
    const a = field(name);
    url = safeURL(url);
    a.hidden = !url;
    if (url) {
      a.href = url;
    }
  }

  function over() {
    setLink("backLink", session && session.cancelUrl);
    show("over", true);
    announce("");
  }

  // --- Formatting --------------------------------------------------------

  // price formats integer minor units in the currency's own number of
  // decimals (ISO 4217: 2 for USD, 0 for JPY, 3 for KWD).
  function price(p) {
    try {
      const fmt = new Intl.NumberFormat(undefined, { style: "currency", currency: p.currency });
      return fmt.format(p.amount / Math.pow(10, fmt.resolvedOptions().maximumFractionDigits));
    } catch (e) {
      return p.amount + " " + p.currency + " (minor units)";
    }
  }

  const brands = {
    visa: "Visa",
    mastercard: "Mastercard",
    amex: "American Express",
    discover: "Discover",
    jcb: "JCB",
    diners: "Diners Club",
    unionpay: "UnionPay",
    maestro: "Maestro",
  };
  const cardName = (m) => (brands[m.brand] || m.brand) + " ending in " + m.last4;
  const expiry = (m) => String(m.expMonth).padStart(2, "0") + "/" + m.expYear;
  const units = (type) =>
    String(type)
      .split("_")
      .map((w) => (w === "ai" ? "AI" : w))
      .join(" ");

  // --- Rendering ---------------------------------------------------------

  function render(s, select) {
    session = s;
    const total = price(s.purchase.price);
    field("offerName").textContent = s.offer.name;
    const quantity = new Intl.NumberFormat().format(s.offer.quantity) + " " + units(s.offer.resourceType);
    field("quantity").textContent = quantity;
    // "100 AI credits" twice says nothing more: one row then.
    field("quantity").parentElement.hidden = quantity === s.offer.name;
    field("price").textContent = total;
    $("pay").textContent = "Pay " + total;
    document.title = "Checkout: " + s.offer.name;
    renderMethods(s.paymentMethods || [], select);
  }

  function selected() {
    const r = document.querySelector('input[name="method"]:checked');
    return r ? r.value : "";
  }

  function renderMethods(methods, select) {
    const want = select || selected();
    const list = $("method-list");
    list.replaceChildren();
    for (const m of methods) {
      const li = document.createElement("li");
      li.dataset.method = m.id;
      const radio = document.createElement("input");
      radio.type = "radio";
      radio.name = "method";
      radio.id = "method-" + m.id;
      radio.value = m.id;
      const label = document.createElement("label");
      label.htmlFor = radio.id;
      label.append(cardName(m));
      if (m.isDefault) {
        const b = document.createElement("span");
        b.className = "badge";
        b.textContent = "Default";
        label.append(" ", b);
      }
      const exp = document.createElement("span");
      exp.className = "exp";
      exp.textContent = "Expires " + expiry(m);
      label.append(exp);
      const tools = document.createElement("span");
      tools.className = "tools";
      if (!m.isDefault) {
        tools.append(toolButton("default", "Make default", m));
      }
      tools.append(toolButton("remove", "Remove", m));
      li.append(radio, label, tools);
      list.append(li);
    }
    const ids = methods.map((m) => m.id);
    const pick = ids.includes(want) ? want : (methods.find((m) => m.isDefault) || methods[0] || {}).id;
    if (pick) {
      $("method-" + pick).checked = true;
    }
    $("methods").hidden = methods.length === 0;
    $("no-methods").hidden = methods.length > 0;
    markSelected();
  }

  function toolButton(action, text, m) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "small";
    b.dataset.action = action;
    b.dataset.method = m.id;
    b.append(text);
    const hidden = document.createElement("span");
    hidden.className = "visually-hidden";
    hidden.textContent = " " + cardName(m);
    b.append(hidden);
    return b;
  }

  function markSelected() {
    for (const li of $("method-list").children) {
      li.classList.toggle("selected", li.querySelector("input").checked);
    }
    updateButtons();
  }

  // Buttons stay focusable while they cannot act (aria-disabled, not
  // disabled), so a keyboard user's focus is never thrown to the page.
  function updateButtons() {
    const payable = !busy && !!selected() && session && session.purchase.state === "open";
    $("pay").setAttribute("aria-disabled", String(!payable));
    for (const b of document.querySelectorAll("#save-card, #cancel, #method-list button")) {
      b.setAttribute("aria-disabled", String(busy));
    }
  }

  function setBusy(on) {
    busy = on;
    updateButtons();
  }

  // --- Saved cards -------------------------------------------------------

  async function refreshMethods(select) {
    const res = await api("GET", API + "/payment-methods");
    if (res.status === 401) {
      over();
      return false;
    }
    if (res.status !== 200) {
      showError(messageOf(res, "the saved cards could not be loaded: reload the page"));
      return false;
    }
    session.paymentMethods = res.body.data;
    renderMethods(session.paymentMethods, select);
    return true;
  }

  async function methodAction(action, id) {
    const m = (session.paymentMethods || []).find((x) => x.id === id);
    if (!m || busy) {
      return;
    }
    clearError();
    setBusy(true);
    try {
      const res =
        action === "default"
          ? await api("PATCH", API + "/payment-methods/" + encodeURIComponent(id) + "/default")
          : await api("DELETE", API + "/payment-methods/" + encodeURIComponent(id));
      if (res.status === 401) {
        over();
        return;
      }
      if (res.status !== 200 && res.status !== 204) {
        showError(messageOf(res, "that did not work: try again"));
        return;
      }
      if (!(await refreshMethods(action === "default" ? id : ""))) {
        return;
      }
      if (action === "default") {
        announce(cardName(m) + " is now your default card.");
        $("method-" + id).focus();
      } else {
        announce(cardName(m) + " was removed.");
        const first = document.querySelector('input[name="method"]');
        (first || $("cc-number")).focus();
      }
    } catch (e) {
      showError("The payment service could not be reached: check your connection and try again.");
    } finally {
      setBusy(false);
    }
  }

  // --- The card form -----------------------------------------------------

  const cardFields = ["cc-number", "cc-exp", "cc-csc"];

  function luhn(digits) {
    let sum = 0;
    for (let i = 0; i < digits.length; i++) {
      let d = digits.charCodeAt(digits.length - 1 - i) - 48;
      if (i % 2 === 1 && (d *= 2) > 9) {
        d -= 9;
      }
      sum += d;
    }
    return sum % 10 === 0;
  }

  // parseExpiry reads MM/YY, MM/YYYY, MMYY or M/YY.
  function parseExpiry(v) {
    const m = /^(\d{1,2})\s*[/\-. ]?\s*(\d{2}|\d{4})$/.exec(v.trim());
    if (!m) {
      return null;
    }
    const month = Number(m[1]);
    const year = m[2].length === 2 ? 2000 + Number(m[2]) : Number(m[2]);
    return month >= 1 && month <= 12 ? { month, year } : null;
  }

  function fieldError(id, text) {
    const input = $(id);
    const p = $(id + "-error");
    input.setAttribute("aria-invalid", text ? "true" : "false");
    p.textContent = text || "";
    p.hidden = !text;
  }

  function clearFieldErrors() {
    for (const id of cardFields) {
      fieldError(id, "");
    }
  }

  // Which field an invalid_card message is about ("number: …").
  const fieldOfMessage = { number: "cc-number", expiry: "cc-exp", cvc: "cc-csc" };

  async function saveCard(event) {
    event.preventDefault();
    if (busy) {
      return;
    }
    clearError();
    clearFieldErrors();
    const number = $("cc-number").value.replace(/[\s-]/g, "");
    const exp = parseExpiry($("cc-exp").value);
    const cvc = $("cc-csc").value.trim();
    const problems = [];
    if (!/^\d{12,19}$/.test(number) || !luhn(number)) {
      problems.push(["cc-number", "Enter the card number as it is printed on the card."]);
    }
    if (!exp) {
      problems.push(["cc-exp", "Enter the expiry date as MM/YY, for example 04/29."]);
    }
    if (!/^\d{3,4}$/.test(cvc)) {
      problems.push(["cc-csc", "Enter the 3 or 4 digit security code."]);
    }
    if (problems.length) {
      for (const [id, text] of problems) {
        fieldError(id, text);
      }
      showError("The card was not saved: " + problems.map((p) => p[1].charAt(0).toLowerCase() + p[1].slice(1, -1)).join("; ") + ".");
      $(problems[0][0]).focus();
      return;
    }
    const body = { number, expMonth: exp.month, expYear: exp.year, cvc, makeDefault: $("cc-default").checked };
    const name = $("cc-name").value.trim();
    if (name) {
      body.name = name;
    }
    setBusy(true);
    announce("Saving your card…");
    let res = null;
    try {
      res = await api("POST", PCI, body);
    } catch (e) {
      res = null;
    } finally {
      // The card is sent (or failed to be): it is not kept here.
      $("cc-number").value = "";
      $("cc-csc").value = "";
      body.number = body.cvc = "";
    }
    try {
      if (res === null) {
        showError("The card could not be sent: check your connection and enter it again.");
        $("cc-number").focus();
        return;
      }
      if (res.status === 401) {
        over();
        return;
      }
      if (res.status === 201) {
        const m = res.body.data;
        $("add-card").reset();
        if (await refreshMethods(m.id)) {
          announce(cardName(m) + " was saved and is selected: you can pay now.");
          $("method-" + m.id).focus();
        }
        return;
      }
      const code = res.body && res.body.error;
      if (code === "invalid_card") {
        const msg = String(res.body.message || "");
        const [key, rest] = msg.split(/:\s*(.*)/s);
        const id = fieldOfMessage[key];
        if (id && rest) {
          fieldError(id, sentence(rest));
          showError("The card was not saved: " + rest.replace(/\.$/, "") + ".");
          $(id === "cc-exp" ? "cc-exp" : "cc-number").focus();
          return;
        }
      }
      showError(code === "card_declined" ? messageOf(res, "the card was declined: try another card") : messageOf(res, "the card was not saved: try again"));
      $("cc-number").focus();
    } finally {
      setBusy(false);
    }
  }

  // --- Paying ------------------------------------------------------------

  // A new Idempotency-Key for each attempt to pay; a retry of the same
  // attempt after a network error reuses it, so it never pays twice.
  function newKey() {
    if (crypto.randomUUID) {
      return crypto.randomUUID();
    }
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function pay() {
    if (busy) {
      return;
    }
    const method = selected();
    if (!method) {
      showError("Choose a saved card or add one first.");
      (document.querySelector('input[name="method"]') || $("cc-number")).focus();
      return;
    }
    clearError();
    setBusy(true);
    announce("Paying…");
    const key = newKey();
    const url = API + "/purchase-intents/" + encodeURIComponent(session.purchase.id) + "/confirm";
    let res = null;
    try {
      for (let attempt = 0; attempt < 6; attempt++) {
        try {
          res = await api("POST", url, { paymentMethodId: method }, { "Idempotency-Key": key });
        } catch (e) {
          res = null; // the network failed: the same attempt again, same key
        }
        if (res && !(res.status === 409 && res.body && res.body.error === "idempotency_key_in_use")) {
          break;
        }
        await sleep(1000 * (attempt + 1));
      }
      if (res === null) {
        // Whether it was paid is unknown: ask the session.
        return await settle("We could not reach the payment service. Reload this page to see whether the payment went through.");
      }
      const data = res.body && res.body.data;
      switch (res.status) {
        case 200:
          return paid(data.session);
        case 202:
          return await processing();
        case 402:
          if (data && data.session) {
            render(data.session, method);
          }
          showError(sentence(res.body.message || "the card was declined: try another card") + " You can choose another card or add a new one.");
          ($("method-" + method) || $("cc-number")).focus();
          return;
        case 401:
          return over();
        case 409:
          return await settle(messageOf(res, "this purchase is being paid already"));
      }
      showError(messageOf(res, "the payment did not go through: try again"));
      if (res.status === 404 || res.status === 400) {
        await refreshMethods();
      }
    } finally {
      setBusy(false);
    }
  }

  // settle loads the session after an unclear answer and shows where it is.
  async function settle(unclear) {
    let res;
    try {
      res = await api("GET", CURRENT);
    } catch (e) {
      showError(unclear);
      return;
    }
    if (res.status === 401) {
      return finished();
    }
    if (res.status !== 200) {
      showError(unclear);
      return;
    }
    const s = res.body.data;
    render(s);
    if (s.purchase.state === "pending" || s.purchase.state === "processing") {
      return processing();
    }
    showError(s.purchase.failureMessage ? sentence(s.purchase.failureMessage) : unclear);
  }

  function paid(s) {
    session = s || session;
    field("doneSummary").textContent = session.offer.name + " for " + price(session.purchase.price);
    setLink("returnLink", session.returnUrl);
    show("done", true);
    announce("Payment received. Taking you back to the merchant.");
    leave(session.returnUrl, 1500);
  }

  // finished: the session ended while its payment was being settled (so it
  // completed, or expired meanwhile). The merchant's backend knows how it
  // went (the trusted status route): go back there.
  function finished() {
    field("doneSummary").textContent = "the payment service has finished with your payment";
    setLink("returnLink", session.returnUrl);
    show("done", true);
    announce("The payment is finished. Taking you back to the merchant, who will show you how it went.");
    leave(session.returnUrl, 1500);
  }

  // processing polls the session until the purchase leaves pending.
  async function processing() {
    show("processing", true);
    announce("Processing your payment…");
    for (let delay = 1500; ; delay = Math.min(delay * 1.5, 10000)) {
      await sleep(delay);
      let res;
      try {
        res = await api("GET", CURRENT);
      } catch (e) {
        continue;
      }
      if (res.status === 401) {
        return finished();
      }
      if (res.status !== 200) {
        continue;
      }
      const s = res.body.data;
      if (s.purchase.state === "pending" || s.purchase.state === "processing") {
        continue;
      }
      if (s.purchase.state === "succeeded") {
        return paid(s);
      }
      render(s);
      show("checkout", true);
      showError(sentence(s.purchase.failureMessage || "the payment did not go through: try another card"));
      return;
    }
  }

  // --- Cancelling --------------------------------------------------------

  async function cancel() {
    if (busy) {
      return;
    }
    clearError();
    setBusy(true);
    announce("Cancelling…");
    try {
      const res = await api("POST", CURRENT + "/cancel");
      if (res.status === 200) {
        const s = res.body.data;
        setLink("cancelLink", s.cancelUrl);
        show("cancelled", true);
        announce("Payment cancelled. Taking you back to the merchant.");
        leave(s.cancelUrl, 0);
        return;
      }
      if (res.status === 401) {
        return over();
      }
      showError(messageOf(res, "the checkout could not be cancelled: try again"));
    } catch (e) {
      showError("The payment service could not be reached: check your connection and try again.");
    } finally {
      setBusy(false);
    }
  }

  // --- Start -------------------------------------------------------------

  async function start() {
    let res;
    try {
      if (token) {
        res = await api("POST", API + "/payment-sessions/redeem", { token, sessionId: pageSession });
        if (res.status === 410) {
          // A used link, but maybe used by this browser (the link opened
          // again, a framing page reloaded): its cookie still holds it.
          const current = await api("GET", CURRENT);
          if (current.status !== 200 || current.body.data.id !== pageSession) {
            show("unavailable", true);
            return;
          }
          res = current;
        }
      } else {
        res = await api("GET", CURRENT);
      }
    } catch (e) {
      show("loading");
      showError("The payment service could not be reached: check your connection and reload the page.");
      return;
    }
    if (res.status === 401) {
      return over();
    }
    if (res.status !== 200 || !res.body || !res.body.data) {
      show("loading");
      showError(messageOf(res, "the checkout could not be loaded: reload the page"));
      return;
    }
    const s = res.body.data;
    if (token && window.top !== window.self) {
      // In another site's frame the cookie is a third-party one: a browser
      // that refuses even partitioned cookies there has dropped it.
      const check = await api("GET", CURRENT).catch(() => null);
      if (check && check.status === 401) {
        show("blocked", true);
        return;
      }
    }
    if (s.id !== pageSession) {
      // The cookie is another checkout's (a newer link opened since), or
      // the link's token is not this page's session: show neither.
      show(token ? "unavailable" : "over", true);
      return;
    }
    render(s);
    if (s.purchase.state === "pending" || s.purchase.state === "processing") {
      return processing();
    }
    show("checkout", true);
    if (s.purchase.state === "open" && s.purchase.failureMessage) {
      showError(sentence(s.purchase.failureMessage) + " You can choose another card or add a new one.");
    }
  }

  $("add-card").addEventListener("submit", saveCard);
  $("pay").addEventListener("click", pay);
  $("cancel").addEventListener("click", cancel);
  $("method-list").addEventListener("change", markSelected);
  $("method-list").addEventListener("click", (e) => {
    const b = e.target.closest("button[data-action]");
    if (b) {
      methodAction(b.dataset.action, b.dataset.method);
    }
  });
  start();
})();
