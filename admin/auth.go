package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"time"
)

// sessionCookie is the console's session cookie. Its value is derived from
// the token (an HMAC of a fixed label), not the token itself: the cookie
// never carries the secret an API client uses, and changing the token ends
// every session.
const sessionCookie = "webhookd_admin"

// sessionTTL is how long a console sign-in lasts.
const sessionTTL = 12 * time.Hour

func (h *handler) sessionValue() string {
	m := hmac.New(sha256.New, []byte(h.Token))
	m.Write([]byte("webhookd admin console session v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// equal compares in constant time, so that the time an answer takes says
// nothing about how much of a guess was right.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// authorized reports whether r carries the bearer token or the session
// cookie.
func (h *handler) authorized(r *http.Request) bool {
	if h.Token == "" {
		return true
	}
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return equal(strings.TrimSpace(tok), h.Token)
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return equal(c.Value, h.sessionValue())
	}
	return false
}

// requireAuth answers 401 (never a redirect) without credentials: a JSON
// error for the API and /metrics, the sign-in page for the console's pages.
func (h *handler) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="webhookd admin"`)
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/metrics" {
			h.renderSignIn(w, r, http.StatusUnauthorized, "")
			return
		}
		writeError(w, http.StatusUnauthorized, "a bearer token or a console sign-in is required")
	})
}

// signIn trades the token, posted by the sign-in form, for the session
// cookie: HttpOnly (no script reads it) and SameSite=Strict (no other site's
// page sends it). A wrong token is 401 with the form again.
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	if h.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if err := r.ParseForm(); err != nil || !equal(r.PostForm.Get("token"), h.Token) {
		h.renderSignIn(w, r, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: h.sessionValue(), Path: "/", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

// signOut ends the console session.
func (h *handler) signOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// localPath keeps a sign-in's return path on this listener: an absolute or
// scheme-relative URL would make the form an open redirect. Only a single
// leading "/" followed by neither "/" nor "\" is kept, and nothing with a
// control character or a "\" anywhere: browsers drop tabs and newlines from
// a Location ("/\t/evil.com" is "//evil.com") and read "\" as "/", and
// http.Redirect cleans the path ("/./\evil.com" becomes "/\evil.com").
// Anything else is "/".
func localPath(p string) string {
	if len(p) < 1 || p[0] != '/' || len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	return p
}

// crossOrigin refuses (403) a state-changing request that a browser marks
// as coming from another site (Sec-Fetch-Site, or an Origin that is not
// this host), whatever its credentials: with SameSite=Strict the cookie is
// not sent on such requests anyway, and this also covers a listener
// without a token, where no cookie is needed. Clients that are not
// browsers send neither header and pass.
func crossOrigin(next http.Handler) http.Handler {
	return http.NewCrossOriginProtection().Handler(next)
}

// loopbackOnly, on a listener without a token, refuses requests whose Host
// is not a loopback name or address (DNS rebinding: a page on
// evil.example whose name now resolves to 127.0.0.1 would otherwise read
// the records as same-origin).
func (h *handler) loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Token == "" && !loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "without an admin token the admin listener answers requests to a loopback host only")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
