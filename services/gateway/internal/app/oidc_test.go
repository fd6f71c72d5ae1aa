package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

const opClientSecret = "gateway-test-client-secret"

// oidcSuite is the gateway in front of auth configured with a real OpenID provider — the
// auth binary's `auth dev-oidc` (zitadel/oidc's op) — with Koor's port on too.
type oidcSuite struct {
	*suite
	gw           *gateway
	gwBase, koor string
	issuer       string
}

func newOIDCSuite(t *testing.T) *oidcSuite {
	t.Helper()
	free, err := ports.Free(3)
	if err != nil {
		t.Fatal(err)
	}
	gwAddr, koorAddr, opAddr := fmt.Sprintf("127.0.0.1:%d", free[0]), fmt.Sprintf("127.0.0.1:%d", free[1]), fmt.Sprintf("127.0.0.1:%d", free[2])
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	consoleCB, koorCB := "http://"+gwAddr+"/auth/oidc/callback", "http://"+koorAddr+"/api/oauth2/callback/dev"
	opFile := write("op.json", map[string]any{
		"users":   []any{map[string]any{"username": "alice", "password": "alice-op-password", "groups": []string{"plinth-admins"}}},
		"clients": []any{map[string]any{"id": "plinth", "secret": opClientSecret, "redirect_uris": []string{consoleCB, koorCB}}},
	})
	startDevOIDC(t, opAddr, opFile)
	providers := write("providers.json", map[string]any{"providers": []any{map[string]any{
		"name": "dev", "label": "Dev OP", "issuer": "http://" + opAddr, "client_id": "plinth",
		"client_secret_file": write("secret", opClientSecret), "scopes": []string{"openid", "profile", "groups"},
		"redirect_urls": []string{consoleCB, koorCB}, "roles": map[string]string{"plinth-admins": "admin"},
	}}})
	s := newSuite(t, "PLINTH_AUTH_OIDC_PROVIDERS_FILE="+providers)
	ui := filepath.Join(dir, "koor-ui")
	if err := os.MkdirAll(ui, 0o755); err != nil {
		t.Fatal(err)
	}
	write("koor-ui/index.html", "<!doctype html><title>Koor</title>")
	gw := s.gateway(t, app.Options{}, "PLINTH_GRPC_ADDR="+gwAddr, "PLINTH_GATEWAY_KOOR_ADDR="+koorAddr, "PLINTH_GATEWAY_KOOR_UI_DIR="+ui)
	t.Cleanup(func() {
		for _, leak := range []string{opClientSecret, "alice-op-password", "plt_"} {
			if strings.Contains(s.logs.String(), leak) {
				t.Errorf("the gateway's log holds %q", leak)
			}
		}
	})
	return &oidcSuite{suite: s, gw: gw, gwBase: "http://" + gwAddr, koor: "http://" + koorAddr, issuer: "http://" + opAddr}
}

// startDevOIDC runs `auth dev-oidc` until the test ends and waits for its discovery document.
func startDevOIDC(t *testing.T, addr, file string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, buildAuth(t), "dev-oidc", "-addr", addr, "-file", file)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/.well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("auth dev-oidc not serving: %v\n%s", err, out.String())
		}
	}
}

// browser follows redirects like a browser, with its own cookies, and stops when it comes
// back to a page of Plinth's (the console's /signin, Koor's /auth/login) or to stopAt.
type browser struct {
	t      *testing.T
	client *http.Client
	stopAt string
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t}
	b.client = &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/signin" || req.URL.Path == "/auth/login" || (b.stopAt != "" && req.URL.Path == b.stopAt) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

var opLoginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signIn opens start (a gateway route that sends the browser to the provider), signs in at
// the provider's login page and returns where the browser was sent last.
func (b *browser) signIn(method, start, user, password string) *url.URL {
	b.t.Helper()
	req, _ := http.NewRequest(method, start, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := opLoginID.FindSubmatch(page)
	if m == nil {
		b.t.Fatalf("%s %s did not reach the provider's login page: %s %s (%s)", method, start, resp.Status, page, resp.Header.Get("Location"))
	}
	resp, err = b.client.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/login",
		url.Values{"id": {string(m[1])}, "username": {user}, "password": {password}})
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return b.location(resp)
}

func (b *browser) location(resp *http.Response) *url.URL {
	b.t.Helper()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		b.t.Fatalf("%s: no redirect (%v)", resp.Status, err)
	}
	return u
}

// get opens u and returns where it redirected.
func (b *browser) get(u string) *url.URL {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return b.location(resp)
}

// TestOIDCThroughTheGateway: a browser starts at the gateway's /auth/oidc/dev/start, signs in
// at the real provider, comes back through /auth/oidc/callback and lands on the console's
// /signin with a Plinth token in the fragment — one that the gateway's token routes accept
// with the role the provider's groups map to. The callback replayed (by the same browser, by
// another, with or without the state's cookie) is refused and sends the browser back with a
// reason; nothing else is issued.
func TestOIDCThroughTheGateway(t *testing.T) {
	s := newOIDCSuite(t)
	ctx := ctxT(t)
	b := newBrowser(t)
	b.stopAt = "/auth/oidc/callback" // to keep the callback for the replays below
	cb := b.signIn(http.MethodGet, s.gwBase+"/auth/oidc/dev/start", "alice", "alice-op-password")
	if cb.Path != "/auth/oidc/callback" || cb.Query().Get("code") == "" {
		t.Fatalf("the provider sent the browser to %s", cb)
	}
	callback := s.gwBase + cb.RequestURI()

	// The callback in another browser (login CSRF: an attacker's link) is refused: the state
	// is bound to the browser that began.
	other := newBrowser(t)
	if got := other.get(callback); got.Path != "/signin" || !strings.Contains(got.Fragment, "error=invalid_state") {
		t.Fatalf("callback in another browser: %s", got)
	}

	b.stopAt = ""
	landed := b.get(callback)
	f, _ := url.ParseQuery(landed.EscapedFragment())
	if landed.Path != "/signin" || !strings.HasPrefix(f.Get("token"), "plt_") || f.Get("role") != "admin" || f.Get("username") != "alice" ||
		f.Get("provider") != "dev" || f.Get("account_id") == "" || landed.RawQuery != "" {
		t.Fatalf("the console got %s", landed)
	}
	if time.Until(time.UnixMilli(mustInt(t, f.Get("expires_at")))) < time.Hour {
		t.Fatalf("expires_at %q", f.Get("expires_at"))
	}
	token := f.Get("token")
	ok, err := authpb.NewAuthServiceClient(s.gw.conn).CheckToken(ctx, &authpb.CheckTokenRequest{Token: token})
	if err != nil || !ok.GetSuccess() {
		t.Fatalf("CheckToken through the gateway: %v %v", ok, err)
	}
	if _, err := adminpb.NewAdminServiceClient(s.gw.conn).ListUsers(bearer(ctx, token), &adminpb.ListUsersRequest{}); err != nil {
		t.Fatalf("an admin's call with the OpenID token: %v", err)
	}

	// Replayed: the cookie is gone, and with it forged back in auth finds the state used.
	if got := b.get(callback); !strings.Contains(got.Fragment, "error=invalid_state") {
		t.Fatalf("replayed callback: %s", got)
	}
	u, _ := url.Parse(s.gwBase + "/auth/oidc/callback")
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "plinth_oidc_state", Value: cb.Query().Get("state"), Path: "/auth/oidc/callback"}})
	got := b.get(callback)
	if m, _ := url.ParseQuery(got.EscapedFragment()); m.Get("error") != "invalid_state" || !strings.Contains(m.Get("message"), "already used") {
		t.Fatalf("replayed callback with the state's cookie: %s", got)
	}
	if strings.Contains(got.String(), cb.Query().Get("code")) {
		t.Error("the refusal quotes the code")
	}

	// An unknown provider goes back to the sign-in page with the reason.
	if got := newBrowser(t).get(s.gwBase + "/auth/oidc/nope/start"); !strings.Contains(got.Fragment, "error=invalid_provider") {
		t.Fatalf("unknown provider: %s", got)
	}
}

// TestOIDCKoorLogin: Koor v0.6.0's UI lists the providers from POST /api/config and its button
// goes to /api/oauth2/login/<name>; the gateway answers as Koor's server does — 307 to the
// provider, the callback at /api/oauth2/callback/<name>, then 307 to /auth/login with
// oauth2Login=success, t (the token) and exp (ms) — and the token works.
func TestOIDCKoorLogin(t *testing.T) {
	s := newOIDCSuite(t)
	ctx := ctxT(t)
	resp, err := http.Post(s.koor+"/api/config", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"providers":[{"name":"dev","label":"Dev OP"}]`) {
		t.Fatalf("POST /api/config: %s", body)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		landed := newBrowser(t).signIn(method, s.koor+"/api/oauth2/login/dev", "alice", "alice-op-password")
		q := landed.Query()
		if landed.Path != "/auth/login" || q.Get("oauth2Login") != "success" || !strings.HasPrefix(q.Get("t"), "plt_") ||
			time.Until(time.UnixMilli(mustInt(t, q.Get("exp")))) < time.Hour {
			t.Fatalf("%s login: Koor's UI got %s", method, landed)
		}
		ok, err := authpb.NewAuthServiceClient(s.gw.conn).CheckToken(ctx, &authpb.CheckTokenRequest{Token: q.Get("t")})
		if err != nil || !ok.GetSuccess() {
			t.Fatalf("CheckToken: %v %v", ok, err)
		}
	}
	if got := newBrowser(t).get(s.koor + "/api/oauth2/login/nope"); got.RawQuery != "oauth2Login=failed&reason=invalid_provider" {
		t.Fatalf("unknown provider: %s", got)
	}
	if got := newBrowser(t).get(s.koor + "/api/oauth2/callback/dev?code=x&state=" + strings.Repeat("A", 43)); got.RawQuery != "oauth2Login=failed&reason=invalid_state" {
		t.Fatalf("callback without a begun sign-in: %s", got)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}
