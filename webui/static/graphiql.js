// Starts GraphiQL on the /graphql page (package webui).
// Kept out of the HTML so the page works under a CSP without 'unsafe-inline'.
(function () {
  "use strict";

  var HEADER = "x-service-key";
  // Where the key field's key is kept across visits.
  var STORED_KEY = "vitola:graphiql:key";
  // Earlier pages put a placeholder in GraphiQL's headers editor; a browser
  // may still have it saved there.
  var OLD_PLACEHOLDER = "<paste your developer key>";

  var root = document.getElementById("graphiql");
  var form = document.getElementById("vitola-key");
  var input = document.getElementById("vitola-key-input");
  var note = document.getElementById("vitola-key-note");

  // The <style> elements GraphiQL's dialogs insert must carry the nonce the
  // page's CSP allows; the bundle reads it from this global (get-nonce).
  window.__webpack_nonce__ = root.getAttribute("data-style-nonce") || undefined;

  // The page is served at the GraphQL endpoint itself: post to the same URL.
  var base = GraphiQL.createFetcher({ url: window.location.pathname });

  function storage(fn) {
    try {
      return fn(window.localStorage);
    } catch (e) {
      return null; // storage off (private mode, a policy): the field still works
    }
  }

  // The key in use: the field's, else none.
  var key = "";

  function say(text) {
    note.textContent = text;
  }

  // use makes k the key in use; remember keeps it for the next visit.
  function use(k, why, remember) {
    key = (k || "").trim();
    input.value = key;
    if (key && remember) {
      storage(function (s) {
        s.setItem(STORED_KEY, key);
      });
    }
    say(why);
  }

  // The editor's own x-service-key header, if it has a usable one, wins.
  function editorKey(headers) {
    var found = null;
    Object.keys(headers).forEach(function (k) {
      if (k.toLowerCase() === HEADER) {
        found = k;
      }
    });
    return found;
  }

  function fetcher(params, opts) {
    var headers = Object.assign({}, opts && opts.headers);
    var k = editorKey(headers);
    if (k !== null && (typeof headers[k] !== "string" || !headers[k].trim() || headers[k] === OLD_PLACEHOLDER)) {
      delete headers[k];
      k = null;
    }
    if (k === null) {
      if (!key) {
        // Not worth a round trip: say what to do instead of the server's
        // "missing x-service-key header".
        return Promise.resolve({
          errors: [{ message: "Enter your developer key in the field above the editor (vitola keys create --name me prints one; make run's demo key is in data/demo-key.txt)." }],
        });
      }
      headers[HEADER] = key;
    }
    return base(params, Object.assign({}, opts, { headers: headers }));
  }

  var reactRoot = ReactDOM.createRoot(root);
  var generation = 0;

  // Rendering anew (another React key) makes GraphiQL fetch the schema again,
  // with the key now in use; its editors come back from its own storage.
  function render() {
    generation++;
    reactRoot.render(
      React.createElement(GraphiQL, {
        key: "g" + generation,
        fetcher: fetcher,
        isHeadersEditorEnabled: true,
        // GraphiQL keeps the headers in localStorage across reloads; its
        // settings dialog lets the user turn that off.
        shouldPersistHeaders: true,
      })
    );
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var k = input.value.trim();
    if (!k) {
      say("Enter a key first.");
      return;
    }
    use(k, "Using this key; it is kept in this browser.", true);
    render();
  });

  document.getElementById("vitola-key-forget").addEventListener("click", function () {
    storage(function (s) {
      s.removeItem(STORED_KEY);
    });
    use("", "Forgotten.", false);
    render();
  });

  var stored = storage(function (s) {
    return s.getItem(STORED_KEY);
  });
  var demo = root.getAttribute("data-demo-key") || "";
  if (stored) {
    use(stored, "Using the key kept in this browser.", false);
  } else if (demo) {
    // Not kept: a later demo (a new data directory) has another key.
    use(demo, "The demo key, filled in because this page was opened on the machine running vitola serve --demo.", false);
  } else {
    say("");
  }
  render();
})();
