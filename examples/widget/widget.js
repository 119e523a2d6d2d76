// The website widget: shows a venue's recent public sessions through the SDK.
// Everything from the API is written with textContent, never as HTML.
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

function render(sessions) {
  list.replaceChildren();
  for (const s of sessions) {
    const li = element("li", "vitola-session" + (s.featured ? " featured" : ""));
    li.append(element("span", "user", s.user.displayName));
    if (s.cigar) li.append(element("span", "cigar", [s.cigar.brandName, s.cigar.name].filter(Boolean).join(" ")));
    if (s.rating !== undefined && s.rating !== null) li.append(element("span", "rating", `rated ${s.rating}`));
    const when = element("time", "when", new Date(s.createdAt).toLocaleDateString());
    when.dateTime = s.createdAt;
    li.append(when);
    list.append(li);
  }
  show(sessions.length ? "" : "No sessions yet.");
}

async function main() {
  const apiKey = setting("key");
  const venue = setting("venue");
  if (!apiKey || !venue) {
    show("Set a publishable key and a venue: ?key=vpk_…&venue=ven_…", true);
    return;
  }
  const client = createClient({ baseUrl: setting("api") || location.origin, apiKey });
  try {
    render(await client.getSessions({ businessType: "venue", businessId: venue, limit: Number(setting("limit")) || 10 }));
  } catch (err) {
    // A key used from an origin it does not list is refused by the API, and the
    // browser reports that as a network error with no details.
    show(`The sessions could not be loaded: ${err.message}`, true);
  }
}

main();
