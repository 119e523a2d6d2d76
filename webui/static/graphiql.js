// Starts GraphiQL on the /graphql page (package webui).
// Kept out of the HTML so the page works under a CSP without 'unsafe-inline'.
(function () {
  "use strict";

  var HEADER = "x-service-key";
  var PLACEHOLDER = "<paste your developer key>";
  // Where GraphiQL keeps the headers editor's text (shouldPersistHeaders).
  var STORED_HEADERS = "graphiql:headers";

  var root = document.getElementById("graphiql");

  // The <style> elements GraphiQL's dialogs insert must carry the nonce the
  // page's CSP allows; the bundle reads it from this global (get-nonce).
  window.__webpack_nonce__ = root.getAttribute("data-style-nonce") || undefined;

  // The page is served at the GraphQL endpoint itself: post to the same URL.
  var base = GraphiQL.createFetcher({ url: window.location.pathname });

  function findKey(headers) {
    var found = null;
    if (headers && typeof headers === "object") {
      Object.keys(headers).forEach(function (k) {
        if (k.toLowerCase() === HEADER) {
          found = k;
        }
      });
    }
    return found;
  }

  function usable(v) {
    return typeof v === "string" && v.trim() !== "" && v !== PLACEHOLDER;
  }

  // The key from the headers GraphiQL saved, or "".
  function storedKey() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(STORED_HEADERS) || "null");
      var k = findKey(saved);
      return k && usable(saved[k]) ? saved[k] : "";
    } catch (e) {
      return "";
    }
  }

  function fetcher(params, opts) {
    var headers = Object.assign({}, opts && opts.headers);
    var k = findKey(headers);
    if (k === null) {
      // GraphiQL's first schema introspection can run before its headers
      // editor exists, and then goes without headers: use the saved key.
      var key = storedKey();
      if (key) {
        headers[HEADER] = key;
      }
    } else if (!usable(headers[k])) {
      // Still the placeholder: send no key, so the server says it's missing
      // rather than wrong.
      delete headers[k];
    }
    return base(params, Object.assign({}, opts, { headers: headers }));
  }

  var defaultHeaders = {};
  defaultHeaders[HEADER] = PLACEHOLDER;

  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultHeaders: JSON.stringify(defaultHeaders, null, 2),
      isHeadersEditorEnabled: true,
      // GraphiQL keeps the headers (the key) in localStorage across reloads;
      // its settings dialog lets the user turn that off.
      shouldPersistHeaders: true,
      defaultEditorToolsVisibility: "headers",
    })
  );
})();
