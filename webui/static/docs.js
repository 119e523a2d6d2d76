// Starts Swagger UI for the API docs page (package webui).
// Kept out of the HTML so the page works under a CSP without 'unsafe-inline'.
(function () {
  "use strict";

  // The apiKey security scheme declared by the OpenAPI document.
  var SCHEME = "serviceKey";
  var HEADER = "x-service-key";

  var root = document.getElementById("swagger-ui");
  var specURL = new URL(root.getAttribute("data-spec-url"), document.baseURI).href;
  var ui = null;

  // The key pasted in the Authorize dialog, or "".
  function serviceKey() {
    if (!ui) {
      return "";
    }
    try {
      var v = ui.authSelectors.authorized().getIn([SCHEME, "value"]);
      return typeof v === "string" ? v.trim() : "";
    } catch (e) {
      return "";
    }
  }

  function sameOrigin(url) {
    try {
      return new URL(url, document.baseURI).origin === window.location.origin;
    } catch (e) {
      return false;
    }
  }

  function hasHeader(headers, name) {
    return Object.keys(headers).some(function (k) {
      return k.toLowerCase() === name;
    });
  }

  ui = SwaggerUIBundle({
    url: specURL,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: true,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "BaseLayout",
    // Operations that declare the serviceKey scheme get the header from
    // Swagger UI itself; this adds it to every other same-origin request too.
    requestInterceptor: function (req) {
      var key = serviceKey();
      if (key && sameOrigin(req.url)) {
        req.headers = req.headers || {};
        if (!hasHeader(req.headers, HEADER)) {
          req.headers[HEADER] = key;
        }
      }
      return req;
    },
  });
  window.ui = ui;
})();
