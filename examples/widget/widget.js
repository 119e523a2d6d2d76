// The website widget: shows a venue's recent public sessions through the SDK,
// and in live mode (data-live="true") each new session as it starts, without
// reloading. Everything from the API is written with textContent, never as HTML.
import { createClient } from "./vitola-sdk.js";

const root = document.getElementById("vitola-sessions");
const status = root.querySelector(".status");
const list = root.querySelector(".list");
const query = new URLSearchParams(location.search);
// The page's own data- attributes win: a crafted link cannot point a site's
// widget at another API. The query string fills only what they leave empty
// (as on the platform's try-out page).
const setting = (name) => root.dataset[name] || query.get(name) || "";

function show(message, isError) {
  status.textContent = message;
  status.classList.toggle("error", Boolean(isError));
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  el.className = className;
  if (text) el.textContent = text;
  return el;
}

// In live mode the list is the newest sessions of the page and the stream,
// each once (the stream may repeat one the page has), at most `limit`.
function merge(add, current, limit) {
  const seen = new Set();
  return [...add, ...current]
    .filter((s) => !seen.has(s.id) && seen.add(s.id))
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0))
    .slice(0, limit);
}

// Why live updates stopped for good, once they have: it stays shown.
let liveStopped = "";

const liveLabels = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…", closed: "Offline" };

function render(sessions) {
  list.replaceChildren();
  for (const s of sessions) {
    const li = element("li", "vitola-session" + (s.featured ? " featured" : ""));
    li.dataset.id = s.id;
    li.append(element("span", "user", s.user.displayName));
    if (s.cigar) li.append(element("span", "cigar", [s.cigar.brandName, s.cigar.name].filter(Boolean).join(" ")));
    if (s.rating !== undefined && s.rating !== null) li.append(element("span", "rating", `rated ${s.rating}`));
    const when = element("time", "when", new Date(s.createdAt).toLocaleDateString());
    when.dateTime = s.createdAt;
    li.append(when);
    list.append(li);
  }
  if (liveStopped) show(liveStopped, true);
  else show(sessions.length ? "" : "No sessions yet.");
}

async function main() {
  const apiKey = setting("key");
  const venue = setting("venue");
  if (!apiKey || !venue) {
    show("Set a publishable key and a venue: ?key=vpk_…&venue=ven_…", true);
    return;
  }
  const client = createClient({ baseUrl: setting("api") || location.origin, apiKey });
  const limit = Number(setting("limit")) || 10;
  let sessions = [];
  let loaded = false;
  if (["true", "1"].includes(setting("live"))) {
    // Subscribed before the page is read, so that no session started in
    // between is missed; sessions that arrive first wait for the page.
    const badge = element("span", "live", liveLabels.connecting);
    root.querySelector("h2").append(" ", badge);
    client.subscribeSessions(
      { businessType: "venue", businessId: venue },
      {
        onSession: (s) => {
          sessions = merge([s], sessions, limit);
          if (loaded) render(sessions);
        },
        onStatus: (state) => {
          root.dataset.liveStatus = state;
          badge.textContent = liveLabels[state];
        },
        onError: (err) => {
          if (err.willRetry) return;
          liveStopped = `Live updates stopped: ${err.message}`;
          show(liveStopped, true);
        },
      },
    );
  }
  try {
    sessions = merge(sessions, await client.getSessions({ businessType: "venue", businessId: venue, limit }), limit);
    loaded = true;
    render(sessions);
  } catch (err) {
    // A key used from an origin it does not list is refused by the API, and the
    // browser reports that as a network error with no details.
    show(`The sessions could not be loaded: ${err.message}`, true);
  }
}

main();
