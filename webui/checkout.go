package webui

import (
	"bytes"
	"context"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// checkoutPath is the hosted checkout's mount point on the payments origin.
const checkoutPath = "/checkout"

// checkoutCSP is the checkout page's policy before its frame-ancestors: its
// own script, style and API only. form-action 'self' keeps even a form that
// somehow submitted natively on this origin.
const checkoutCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors "

// checkoutID is the shape of a session ID in the page's path.
var checkoutID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckoutHandler serves the hosted checkout page of the payments origin.
// Below its mount point /checkout it answers:
//
//   - GET /checkout/{sessionID}: the page (HTML, never cached). The buyer
//     arrives with the session's one-time token in the URL's fragment; the
//     page's script redeems it through the payments API on this origin.
//   - GET /checkout/assets/<file>: the page's script and stylesheet,
//     content-hashed and cached as immutable.
//
// The page may be framed only by the origins frameOrigins returns for the
// session (its client's registered origins: the CSP's frame-ancestors;
// 'none' when there are none). HEAD is accepted wherever GET is; other
// methods are a JSON 405, other paths a JSON 404.
func CheckoutHandler(frameOrigins func(ctx context.Context, sessionID string) []string) http.Handler {
	s := newSite(checkoutPath)
	var page bytes.Buffer
	if err := checkoutPage.Execute(&page, pageData{CSS: []string{s.own("checkout.css")}, JS: []string{s.own("checkout.js")}}); err != nil {
		panic("webui: rendering the checkout page: " + err.Error())
	}
	return &checkoutSite{assets: s, page: page.Bytes(), frameOrigins: frameOrigins}
}

type checkoutSite struct {
	assets       *site
	page         []byte
	frameOrigins func(ctx context.Context, sessionID string) []string
}

func (c *checkoutSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, checkoutPath+"/")
	if !ok || id == "assets" || strings.HasPrefix(id, "assets/") || !checkoutID.MatchString(id) {
		c.assets.ServeHTTP(w, r) // its assets, or its JSON 404 and 405
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed on the checkout page; use GET")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", checkoutCSP+frameAncestors(c.frameOrigins(r.Context(), id)))
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", cacheNever)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(c.page))
}

// frameAncestors is the frame-ancestors source list of origins: each one
// scheme://host[:port] exactly (anything else is dropped, so a bad
// registration cannot widen or break the policy), or 'none'.
func frameAncestors(origins []string) string {
	var out []string
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(o, " ;,'\"*\t\r\n") || o != u.Scheme+"://"+u.Host {
			continue
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		return "'none'"
	}
	return strings.Join(out, " ")
}

// checkoutPage is the hosted checkout. Everything but the loading notice is
// hidden until the script shows it: without the script (or before it runs)
// the card form cannot be submitted. Text that the script fills is marked
// with data-field; states are the <section>s with data-view.
var checkoutPage = template.Must(template.New("checkout").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Checkout</title>
<link rel="icon" href="data:,">
{{- range .CSS}}
<link rel="stylesheet" href="{{$.Base}}assets/{{.}}">
{{- end}}
</head>
<body>
<main id="main" aria-busy="true">
<h1 id="title" tabindex="-1">Checkout</h1>
<div id="alert" class="alert" role="alert" aria-atomic="true"></div>
<p id="status" class="status" role="status" aria-live="polite" aria-atomic="true"></p>

<section data-view="loading">
<p>Loading your checkout…</p>
<noscript><p>This checkout needs JavaScript. Turn it on and open the payment link again.</p></noscript>
</section>

<section data-view="unavailable" hidden>
<h2>This payment link can’t be used</h2>
<p>It is invalid, has expired or was used already. Go back to the merchant and start the payment again to get a new link.</p>
</section>

<section data-view="over" hidden>
<h2>This checkout is over</h2>
<p>It was completed, cancelled or has expired. Go back to the merchant and start again if you still want to pay.</p>
<p><a data-field="backLink" href="#" hidden>Back to the merchant</a></p>
</section>

<section data-view="blocked" hidden>
<h2>Your browser blocked this checkout</h2>
<p>Inside the merchant’s page, this browser refuses the cookie the checkout needs. Go back to the merchant and choose to pay in a new window, or allow cookies for this site.</p>
</section>

<section data-view="checkout" hidden>
<section class="card order" aria-labelledby="order-title">
<h2 id="order-title">Your order</h2>
<dl>
<div><dt>Item</dt><dd data-field="offerName"></dd></div>
<div><dt>Quantity</dt><dd data-field="quantity"></dd></div>
<div class="total"><dt>Total</dt><dd data-field="price"></dd></div>
</dl>
</section>

<section class="card" aria-labelledby="methods-title">
<h2 id="methods-title">Pay with</h2>
<fieldset id="methods" hidden>
<legend>Saved cards</legend>
<ul id="method-list" class="methods"></ul>
</fieldset>
<p id="no-methods">No saved cards yet: add one below.</p>

<form id="add-card" class="add-card" method="post" novalidate autocomplete="on">
<h3 id="add-title">Add a card</h3>
<p class="hint">Card details go straight to the payment service on this page’s own address.</p>
<div class="field">
<label for="cc-number">Card number</label>
<input id="cc-number" name="cardnumber" type="text" inputmode="numeric" autocomplete="cc-number" autocorrect="off" autocapitalize="off" spellcheck="false" maxlength="23" aria-describedby="cc-number-error" required>
<p id="cc-number-error" class="field-error" hidden></p>
</div>
<div class="row">
<div class="field">
<label for="cc-exp">Expiry date <span class="label-hint">(MM/YY)</span></label>
<input id="cc-exp" name="cc-exp" type="text" inputmode="numeric" autocomplete="cc-exp" placeholder="MM/YY" maxlength="7" aria-describedby="cc-exp-error" required>
<p id="cc-exp-error" class="field-error" hidden></p>
</div>
<div class="field">
<label for="cc-csc">Security code <span class="label-hint">(CVC)</span></label>
<input id="cc-csc" name="cvc" type="text" inputmode="numeric" autocomplete="cc-csc" maxlength="4" aria-describedby="cc-csc-hint cc-csc-error" required>
<p id="cc-csc-hint" class="hint">3 digits on the back, 4 on the front for American Express</p>
<p id="cc-csc-error" class="field-error" hidden></p>
</div>
</div>
<div class="field">
<label for="cc-name">Name on card <span class="label-hint">(optional)</span></label>
<input id="cc-name" name="ccname" type="text" autocomplete="cc-name" autocapitalize="words" spellcheck="false" maxlength="100">
</div>
<div class="check">
<input id="cc-default" name="default" type="checkbox">
<label for="cc-default">Make this my default card</label>
</div>
<button id="save-card" type="submit" class="secondary">Save card</button>
</form>
</section>

<div class="actions">
<button id="pay" type="button" class="primary" aria-disabled="true">Pay</button>
<button id="cancel" type="button" class="link">Cancel and go back</button>
</div>
</section>

<section data-view="processing" hidden>
<h2>Processing your payment…</h2>
<p>The payment service has not answered yet. Keep this page open: it updates by itself.</p>
</section>

<section data-view="done" hidden>
<h2>Payment received</h2>
<p>Thank you: <span data-field="doneSummary"></span>. Taking you back to the merchant…</p>
<p><a data-field="returnLink" href="#">Continue to the merchant</a></p>
</section>

<section data-view="cancelled" hidden>
<h2>Payment cancelled</h2>
<p>Nothing was charged. Taking you back to the merchant…</p>
<p><a data-field="cancelLink" href="#">Back to the merchant</a></p>
</section>
</main>
{{- range .JS}}
<script src="{{$.Base}}assets/{{.}}"></script>
{{- end}}
</body>
</html>
`))
