package restshim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/accesstoken"
	"github.com/vitolahq/vitola/internal/kv"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// The OAuth endpoints map HTTP (forms, cookies, redirects) to the users
// subgraph's internal authorization-server fields, where the rules live.

var (
	opAuthenticate = subgraph.MustParse(`query OAuthAuthenticate($email: String!, $password: String!) { oauthAuthenticate(email: $email, password: $password) }`)
	opCheck        = subgraph.MustParse(`query OAuthCheck($c: String!, $r: String!, $rt: String!, $s: String!, $cc: String!, $ccm: String!) {
  oauthCheckAuthorize(clientId: $c, redirectUri: $r, responseType: $rt, scope: $s, codeChallenge: $cc, codeChallengeMethod: $ccm) { redirectable clientName scopes error errorDescription }
}`)
	opIssueCode = subgraph.MustParse(`query OAuthIssueCode($c: String!, $u: ID!, $r: String!, $s: String!, $cc: String!) {
  oauthIssueCode(clientId: $c, userId: $u, redirectUri: $r, scope: $s, codeChallenge: $cc)
}`)
	opToken = subgraph.MustParse(`query OAuthToken($g: String!, $c: String!, $cs: String, $code: String, $r: String, $v: String, $rt: String) {
  oauthToken(grantType: $g, clientId: $c, clientSecret: $cs, code: $code, redirectUri: $r, codeVerifier: $v, refreshToken: $rt)
}`)
	opRevoke = subgraph.MustParse(`query OAuthRevoke($c: String!, $cs: String, $t: String!) { oauthRevoke(clientId: $c, clientSecret: $cs, token: $t) }`)
)

func init() {
	userOperations = append(userOperations, opAuthenticate, opCheck, opIssueCode, opToken, opRevoke)
}

const (
	csrfCookie    = "vitola_csrf"
	sessionCookie = "vitola_session"
	sessionTTL    = 10 * time.Minute
)

// scopeText tells the user what each scope lets the application read (or do).
var scopeText = map[string]string{
	"profile:read":     "your public profile: name, picture, website and bio",
	"email:read":       "your email address",
	"collections:read": "your collections",
	"humidor:read":     "the contents of your humidors",
	"sessions:read":    "your smoke sessions",
	"sessions:write":   "record smoke sessions in your name",
	"checkins:read":    "your check-ins",
}

var pages = template.Must(template.New("").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}} · Vitola</title></head><body><main><h1>{{.Title}}</h1>{{end}}
{{define "params"}}<input type="hidden" name="csrf" value="{{.CSRF}}">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}{{end}}
{{define "login"}}{{template "head" .}}
<p><strong>{{.Client}}</strong> wants to connect to your Vitola account.</p>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/oauth/login">{{template "params" .}}
<label>Email <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form></main></body></html>{{end}}
{{define "consent"}}{{template "head" .}}
<p><strong>{{.Client}}</strong> asks to read:</p>
<ul>{{range .Scopes}}<li data-scope="{{.Name}}"><code>{{.Name}}</code>: {{.Text}}</li>{{end}}</ul>
<form method="post" action="/oauth/consent">{{template "params" .}}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button></form></main></body></html>{{end}}
{{define "error"}}{{template "head" .}}<p role="alert">{{.Error}}</p></main></body></html>{{end}}
`))

type scopeLine struct{ Name, Text string }

type page struct {
	Title, Client, Error, CSRF string
	Params                     map[string]string
	Scopes                     []scopeLine
}

// authParams are the authorization request's parameters, carried through the
// login and consent forms and checked again at every step.
var authParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"}

type oauthHandlers struct {
	users   *subgraph.Client
	key     []byte // signs the CSRF and session cookies
	log     zerolog.Logger
	issuer  string
	signIns *signInLimits
}

// Sign-in attempts allowed per window, per account and per client address:
// enough for people who mistype, far too few to guess passwords.
const (
	signInsPerAccount = 10
	signInsPerAddress = 50
	signInWindow      = 15 * time.Minute
)

type signInLimits struct{ account, address *kv.Limiter }

func newSignInLimits(store kv.Store) *signInLimits {
	if store == nil {
		return nil
	}
	return &signInLimits{
		account: &kv.Limiter{Store: store, Prefix: "signin:account:", Max: signInsPerAccount, Window: signInWindow},
		address: &kv.Limiter{Store: store, Prefix: "signin:address:", Max: signInsPerAddress, Window: signInWindow},
	}
}

func (l *signInLimits) allow(r *http.Request, email string) bool {
	if l == nil {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	account := l.account.Allow(r.Context(), strings.ToLower(strings.TrimSpace(email)))
	address := l.address.Allow(r.Context(), host)
	return account && address
}

func (h *oauthHandlers) mac(parts ...string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func writePage(w http.ResponseWriter, status int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	ownPage(w)
	w.WriteHeader(status)
	pages.ExecuteTemplate(w, name, p)
}

// csrf returns the form token bound to the browser's CSRF cookie (set now when
// missing): a form from another site cannot know it.
func (h *oauthHandlers) csrf(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	value := ""
	if err == nil && len(c.Value) >= 32 {
		value = c.Value
	} else {
		b := make([]byte, 24)
		rand.Read(b)
		value = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: value, Path: "/oauth", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	}
	return h.mac("csrf", value)
}

func (h *oauthHandlers) csrfOK(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	return err == nil && hmac.Equal([]byte(h.mac("csrf", c.Value)), []byte(r.PostFormValue("csrf")))
}

func (h *oauthHandlers) setSession(w http.ResponseWriter, r *http.Request, userID string) {
	exp := strconv.FormatInt(time.Now().Add(sessionTTL).Unix(), 10)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: userID + "." + exp + "." + h.mac("session", userID, exp),
		Path: "/oauth", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
}

func (h *oauthHandlers) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || !hmac.Equal([]byte(parts[2]), []byte(h.mac("session", parts[0], parts[1]))) {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() > exp {
		return "", false
	}
	return parts[0], true
}

type checkResult struct {
	Redirectable     bool     `json:"redirectable"`
	ClientName       *string  `json:"clientName"`
	Scopes           []string `json:"scopes"`
	Error            *string  `json:"error"`
	ErrorDescription *string  `json:"errorDescription"`
}

// check validates the request's parameters (from the query or a form): it
// answers itself (an error page, or an error sent to the redirect URI) and
// returns false when the flow stops.
func (h *oauthHandlers) check(w http.ResponseWriter, r *http.Request, params map[string]string) (*checkResult, bool) {
	var data struct {
		Check checkResult `json:"oauthCheckAuthorize"`
	}
	err := h.users.Do(r.Context(), opCheck, map[string]any{"c": params["client_id"], "r": params["redirect_uri"], "rt": params["response_type"],
		"s": params["scope"], "cc": params["code_challenge"], "ccm": params["code_challenge_method"]}, &data)
	if err != nil {
		h.log.Error().Err(err).Msg("check an authorization request")
		writePage(w, http.StatusBadGateway, "error", page{Title: "Something went wrong", Error: "The sign-in service is unavailable; try again shortly."})
		return nil, false
	}
	c := data.Check
	if !c.Redirectable {
		writePage(w, http.StatusBadRequest, "error", page{Title: "This sign-in link is not valid", Error: deref(c.ErrorDescription)})
		return nil, false
	}
	if c.Error != nil {
		h.redirectWith(w, r, params, url.Values{"error": {*c.Error}, "error_description": {deref(c.ErrorDescription)}})
		return nil, false
	}
	return &c, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// redirectWith sends the browser back to the client's (checked) redirect URI,
// naming the issuer (RFC 9207) so that clients can tell servers apart.
func (h *oauthHandlers) redirectWith(w http.ResponseWriter, r *http.Request, params map[string]string, v url.Values) {
	u, _ := url.Parse(params["redirect_uri"])
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	if s := params["state"]; s != "" {
		q.Set("state", s)
	}
	q.Set("iss", h.issuer)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func paramsOf(get func(string) string) map[string]string {
	p := map[string]string{}
	for _, k := range authParams {
		p[k] = get(k)
	}
	return p
}

func (h *oauthHandlers) consentPage(w http.ResponseWriter, r *http.Request, c *checkResult, params map[string]string) {
	p := page{Title: "Allow access?", Client: deref(c.ClientName), CSRF: h.csrf(w, r), Params: params}
	for _, s := range c.Scopes {
		text := scopeText[s]
		if text == "" {
			text = "granted, but it enables nothing yet"
		}
		p.Scopes = append(p.Scopes, scopeLine{s, text})
	}
	writePage(w, http.StatusOK, "consent", p)
}

// GET /oauth/authorize
func (h *oauthHandlers) authorize(w http.ResponseWriter, r *http.Request) {
	params := paramsOf(r.URL.Query().Get)
	c, ok := h.check(w, r, params)
	if !ok {
		return
	}
	if _, ok := h.session(r); ok {
		h.consentPage(w, r, c, params)
		return
	}
	writePage(w, http.StatusOK, "login", page{Title: "Sign in", Client: deref(c.ClientName), CSRF: h.csrf(w, r), Params: params})
}

// POST /oauth/login
func (h *oauthHandlers) login(w http.ResponseWriter, r *http.Request) {
	params := paramsOf(r.PostFormValue)
	if !h.csrfOK(r) {
		writePage(w, http.StatusForbidden, "error", page{Title: "Sign-in expired", Error: "This form has expired or did not come from Vitola. Start again from the application."})
		return
	}
	c, ok := h.check(w, r, params)
	if !ok {
		return
	}
	if !h.signIns.allow(r, r.PostFormValue("email")) {
		writePage(w, http.StatusTooManyRequests, "login", page{Title: "Sign in", Client: deref(c.ClientName), CSRF: h.csrf(w, r), Params: params,
			Error: "Too many sign-in attempts. Wait 15 minutes and try again."})
		return
	}
	var data struct {
		UserID *string `json:"oauthAuthenticate"`
	}
	if err := h.users.Do(r.Context(), opAuthenticate, map[string]any{"email": r.PostFormValue("email"), "password": r.PostFormValue("password")}, &data); err != nil {
		h.log.Error().Err(err).Msg("authenticate a user")
		writePage(w, http.StatusBadGateway, "error", page{Title: "Something went wrong", Error: "The sign-in service is unavailable; try again shortly."})
		return
	}
	if data.UserID == nil {
		writePage(w, http.StatusUnauthorized, "login", page{Title: "Sign in", Client: deref(c.ClientName), CSRF: h.csrf(w, r), Params: params, Error: "Wrong email or password."})
		return
	}
	h.setSession(w, r, *data.UserID)
	h.consentPage(w, r, c, params)
}

// POST /oauth/consent
func (h *oauthHandlers) consent(w http.ResponseWriter, r *http.Request) {
	params := paramsOf(r.PostFormValue)
	userID, signedIn := h.session(r)
	if !h.csrfOK(r) || !signedIn {
		writePage(w, http.StatusForbidden, "error", page{Title: "Sign-in expired", Error: "This form has expired or did not come from Vitola. Start again from the application."})
		return
	}
	c, ok := h.check(w, r, params)
	if !ok {
		return
	}
	if r.PostFormValue("decision") != "allow" {
		h.redirectWith(w, r, params, url.Values{"error": {"access_denied"}, "error_description": {"the user denied access"}})
		return
	}
	var data struct {
		Code string `json:"oauthIssueCode"`
	}
	err := h.users.Do(r.Context(), opIssueCode, map[string]any{"c": params["client_id"], "u": userID, "r": params["redirect_uri"],
		"s": strings.Join(c.Scopes, " "), "cc": params["code_challenge"]}, &data)
	if err != nil {
		h.log.Error().Err(err).Msg("issue an authorization code")
		h.redirectWith(w, r, params, url.Values{"error": {"server_error"}})
		return
	}
	h.redirectWith(w, r, params, url.Values{"code": {data.Code}})
}

// clientCredentials reads client authentication: HTTP Basic, or the form.
func clientCredentials(r *http.Request) (id, secret string) {
	if u, p, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(p)
		return id, secret
	}
	return r.PostFormValue("client_id"), r.PostFormValue("client_secret")
}

// tokenError writes an RFC 6749 §5.2 error (with the platform's message too).
func tokenError(w http.ResponseWriter, code, desc string) {
	status := http.StatusBadRequest
	if code == "invalid_client" {
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", `Basic realm="vitola"`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc, "message": desc})
}

// fromOAuthError maps the subgraph's OAUTH_* codes to RFC 6749 errors.
func (h *oauthHandlers) fromOAuthError(w http.ResponseWriter, err error) {
	var gerrs subgraph.Errors
	if errors.As(err, &gerrs) && strings.HasPrefix(gerrs.Code(), "OAUTH_") {
		tokenError(w, strings.ToLower(strings.TrimPrefix(gerrs.Code(), "OAUTH_")), gerrs[0].Message)
		return
	}
	h.log.Error().Err(err).Msg("token endpoint")
	tokenError(w, "server_error", "the authorization server is unavailable; try again shortly")
}

// POST /oauth/token
func (h *oauthHandlers) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "send an application/x-www-form-urlencoded body")
		return
	}
	id, secret := clientCredentials(r)
	if id == "" {
		tokenError(w, "invalid_client", "client_id is required")
		return
	}
	vars := map[string]any{"g": r.PostFormValue("grant_type"), "c": id, "cs": secret, "code": r.PostFormValue("code"),
		"r": r.PostFormValue("redirect_uri"), "v": r.PostFormValue("code_verifier"), "rt": r.PostFormValue("refresh_token")}
	raw, err := h.users.Field(r.Context(), opToken, vars, "oauthToken")
	if err != nil {
		h.fromOAuthError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.Write(raw)
}

// POST /oauth/revoke (RFC 7009)
func (h *oauthHandlers) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostFormValue("token") == "" {
		tokenError(w, "invalid_request", "token is required")
		return
	}
	id, secret := clientCredentials(r)
	var data struct {
		OK bool `json:"oauthRevoke"`
	}
	if err := h.users.Do(r.Context(), opRevoke, map[string]any{"c": id, "cs": secret, "t": r.PostFormValue("token")}, &data); err != nil {
		h.fromOAuthError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// GET /.well-known/oauth-authorization-server (RFC 8414)
func (h *oauthHandlers) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	json.NewEncoder(w).Encode(accesstoken.Metadata(h.issuer))
}
