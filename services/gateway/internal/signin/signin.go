// Package signin is the browser's side of OpenID Connect sign-in: the gateway's routes that
// send a browser to the provider and take it back, for Plinth's console (/auth/oidc/) and
// for Koor data-control-center's UI (/api/oauth2/, the paths and redirects of Koor v0.6.0's
// own server, pkg/server/oauth2). Everything that decides — the state, the code, the ID
// token, the role, the token — is auth's (plinth.auth.v1.OIDCService); here the state is
// bound to the browser that began the sign-in (an HttpOnly cookie), so a callback another
// browser delivers (login CSRF, a replayed link) is refused before auth is asked.
package signin

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Paths of the console's flow, and where the console receives the outcome.
const (
	ConsoleStartPattern = "GET /auth/oidc/{provider}/start"
	ConsoleCallbackPath = "/auth/oidc/callback"
	// ConsoleSignInPath is the console's sign-in page: the outcome travels in its URL's
	// fragment, which browsers never send to a server (no access log holds the token).
	ConsoleSignInPath = "/signin"
	// Koor v0.6.0's routes (pkg/server/oauth2.Register) and its UI's login page.
	KoorLoginPattern    = "/api/oauth2/login/{provider}"
	KoorCallbackPattern = "/api/oauth2/callback/{provider}"
	KoorLoginPage       = "/auth/login"
)

// stateCookie holds the state of the sign-in this browser began; its path limits it to the
// callbacks.
const (
	stateCookie     = "plinth_oidc_state"
	koorStateCookie = "plinth_koor_oauth2_state"
	callTimeout     = 30 * time.Second
)

// Routes serves the sign-in routes on mux, calling auth through conn. Each route works on
// either of the gateway's ports; the callback URL given to auth is this request's own origin
// (auth accepts only the redirect URLs its provider is configured with).
func Routes(mux *http.ServeMux, conn grpc.ClientConnInterface, log *slog.Logger) {
	r := &routes{auth: authpb.NewOIDCServiceClient(conn), log: log}
	mux.HandleFunc(ConsoleStartPattern, r.consoleStart)
	mux.HandleFunc("GET "+ConsoleCallbackPath, r.consoleCallback)
	mux.HandleFunc("GET "+KoorLoginPattern, r.koorLogin)
	mux.HandleFunc("POST "+KoorLoginPattern, r.koorLogin)
	mux.HandleFunc("GET "+KoorCallbackPattern, r.koorCallback)
	mux.HandleFunc("POST "+KoorCallbackPattern, r.koorCallback)
}

type routes struct {
	auth authpb.OIDCServiceClient
	log  *slog.Logger
}

// origin is the scheme and host the browser reached: the callback URL's base.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// withClient names the browser's address to auth (its gateway listener believes the last
// x-forwarded-for entry, which the gateway writes), as the proxy does for calls.
func withClient(ctx context.Context, r *http.Request) context.Context {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", ip)
}

// begin asks auth for the provider's authorization URL and binds its state to the browser in
// cookie name (scoped to path), then redirects there with code.
func (rt *routes) begin(w http.ResponseWriter, r *http.Request, provider, callback, cookie, path string, code int) error {
	ctx, cancel := context.WithTimeout(withClient(r.Context(), r), callTimeout)
	defer cancel()
	b, err := rt.auth.BeginSignIn(ctx, &authpb.BeginSignInRequest{Provider: provider, RedirectUri: callback})
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: cookie, Value: b.GetState(), Path: path, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteLaxMode, Expires: b.GetExpireTime().AsTime(), MaxAge: int(time.Until(b.GetExpireTime().AsTime()).Seconds()) + 1})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, b.GetAuthorizationUrl(), code)
	return nil
}

// complete checks that the callback's state is the one this browser began with (the cookie,
// which it then clears) and asks auth to complete the sign-in.
func (rt *routes) complete(w http.ResponseWriter, r *http.Request, provider, cookie, path string) (*authpb.CompleteSignInResponse, error) {
	state := r.FormValue("state")
	c, err := r.Cookie(cookie)
	http.SetCookie(w, &http.Cookie{Name: cookie, Value: "", Path: path, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: -1})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if e := r.FormValue("error"); e != "" {
		return nil, &refusal{reason: "provider_failed", message: "the provider did not sign you in (" + input.Truncate(e, 64) + ")"}
	}
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		return nil, &refusal{reason: "invalid_state", message: "this sign-in was not begun in this browser, or was already completed; sign in again"}
	}
	callback := *r.URL
	callback.RawQuery, callback.Fragment = "", ""
	ctx, cancel := context.WithTimeout(withClient(r.Context(), r), callTimeout)
	defer cancel()
	return rt.auth.CompleteSignIn(ctx, &authpb.CompleteSignInRequest{Code: r.FormValue("code"), State: state,
		RedirectUri: origin(r) + callback.Path, Provider: provider})
}

// refusal is a callback refused by the gateway itself.
type refusal struct{ reason, message string }

func (e *refusal) Error() string { return e.message }

// messageOf is what the browser is told of err: the gateway's refusal, or auth's status
// message (auth's messages hold no secret), never a transport error's text.
func messageOf(err error) (reason, message string) {
	if rf, ok := err.(*refusal); ok {
		return rf.reason, rf.message
	}
	st := status.Convert(err)
	return reasonOf(st.Code().String()), st.Message()
}

// reasonOf maps auth's code to Koor's reasons (pkg/server/oauth2: invalid_state,
// invalid_provider, provider_failed, internal_error).
func reasonOf(code string) string {
	switch code {
	case "FailedPrecondition":
		return "invalid_state"
	case "NotFound", "InvalidArgument":
		return "invalid_provider"
	case "Unauthenticated", "PermissionDenied", "Unavailable":
		return "provider_failed"
	}
	return "internal_error"
}

// consoleStart: GET /auth/oidc/{provider}/start → 302 to the provider.
func (rt *routes) consoleStart(w http.ResponseWriter, r *http.Request) {
	if err := rt.begin(w, r, r.PathValue("provider"), origin(r)+ConsoleCallbackPath, stateCookie, ConsoleCallbackPath, http.StatusFound); err != nil {
		rt.toConsole(w, r, err)
	}
}

// consoleCallback: GET /auth/oidc/callback?code&state → auth's CompleteSignIn → 302 to the
// console's sign-in page with the session (or the refusal) in the fragment.
func (rt *routes) consoleCallback(w http.ResponseWriter, r *http.Request) {
	done, err := rt.complete(w, r, "", stateCookie, ConsoleCallbackPath)
	if err != nil {
		rt.toConsole(w, r, err)
		return
	}
	f := url.Values{
		"token": {done.GetToken()}, "expires_at": {strconv.FormatInt(done.GetExpireTime().AsTime().UnixMilli(), 10)},
		"account_id": {done.GetAccountId()}, "username": {done.GetUsername()}, "role": {done.GetRole()}, "provider": {done.GetProvider()},
	}
	http.Redirect(w, r, ConsoleSignInPath+"#"+f.Encode(), http.StatusFound)
}

// toConsole sends the browser to the console's sign-in page with why it failed.
func (rt *routes) toConsole(w http.ResponseWriter, r *http.Request, err error) {
	reason, msg := messageOf(err)
	rt.log.InfoContext(r.Context(), "OpenID sign-in refused", "route", r.URL.Path, "reason", reason, "message", msg)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, ConsoleSignInPath+"#"+url.Values{"error": {reason}, "message": {msg}}.Encode(), http.StatusFound)
}

// koorLogin: GET|POST /api/oauth2/login/{provider} → 307 to the provider, as Koor's server.
func (rt *routes) koorLogin(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("provider")
	path := "/api/oauth2/callback/" + url.PathEscape(p)
	if err := rt.begin(w, r, p, origin(r)+path, koorStateCookie, path, http.StatusTemporaryRedirect); err != nil {
		rt.toKoor(w, r, err)
	}
}

// koorCallback: GET|POST /api/oauth2/callback/{provider} → 307 to Koor's login page with
// oauth2Login=success, t (the token) and exp (its expiry, ms since the epoch), as Koor's
// server answers; its UI's login page keeps them (src/components/auth/Login.vue).
func (rt *routes) koorCallback(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("provider")
	done, err := rt.complete(w, r, p, koorStateCookie, "/api/oauth2/callback/"+url.PathEscape(p))
	if err != nil {
		rt.toKoor(w, r, err)
		return
	}
	http.Redirect(w, r, KoorLoginPage+"?oauth2Login=success&t="+url.QueryEscape(done.GetToken())+
		"&exp="+strconv.FormatInt(done.GetExpireTime().AsTime().UnixMilli(), 10), http.StatusTemporaryRedirect)
}

// toKoor sends the browser to Koor's login page with oauth2Login=failed and a reason of
// Koor's.
func (rt *routes) toKoor(w http.ResponseWriter, r *http.Request, err error) {
	reason, msg := messageOf(err)
	rt.log.InfoContext(r.Context(), "OpenID sign-in refused", "route", r.URL.Path, "reason", reason, "message", msg)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, KoorLoginPage+"?oauth2Login=failed&reason="+url.QueryEscape(reason), http.StatusTemporaryRedirect)
}
