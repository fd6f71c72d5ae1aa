package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	oidcpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
	"github.com/plinth-dev/plinth/services/auth/internal/oidctest"
)

// The provider's users, client and secrets in these tests. The secrets are leak markers too:
// no log line may hold one.
const (
	clientSecret = "oidc-client-secret-xyzzy"
	callbackURL  = "http://127.0.0.1:9/auth/oidc/callback" // nothing listens: the test reads the redirect
	koorCallback = "http://127.0.0.1:9/api/oauth2/callback/testop"
)

var opUsers = []oidctest.User{
	{Username: "alice", Password: "alice-op-password", Email: "alice@example.test", Groups: []string{"plinth-admins", "staff"}},
	{Username: "olga", Password: "olga-op-password", Groups: []string{"ops"}},
	{Username: "bob", Password: "bob-op-password", Email: "bob@example.test", Groups: []string{"staff"}},
	{Username: "nobody", Password: "nobody-op-password", Groups: []string{"visitors"}},
}

// startOP starts a real OpenID provider (zitadel/oidc's op) on a random port.
func startOP(t testing.TB) *oidctest.Provider {
	t.Helper()
	p, err := oidctest.Start("127.0.0.1:0", oidctest.Config{Users: opUsers, Clients: []oidctest.Client{
		{ID: "plinth", Secret: clientSecret, RedirectURIs: []string{callbackURL, koorCallback}},
		{ID: "other-app", Secret: "other-secret", RedirectURIs: []string{callbackURL}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// withProvider configures auth with the provider as "testop": groups plinth-admins → admin,
// ops → operator, staff → viewer; no default role (someone only in "visitors" is refused).
func withProvider(t testing.TB, p *oidctest.Provider, extra map[string]any) func(*app.Config) {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(clientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prov := map[string]any{
		"name": "testop", "label": "Test OP", "issuer": p.Issuer, "client_id": "plinth", "client_secret_file": secret,
		"scopes": []string{"openid", "profile", "email", "groups"}, "redirect_urls": []string{callbackURL, koorCallback},
		"roles": map[string]string{"plinth-admins": "admin", "ops": "operator", "staff": "viewer"},
	}
	for k, v := range extra {
		prov[k] = v
	}
	doc, _ := json.Marshal(map[string]any{"providers": []any{prov}})
	file := filepath.Join(dir, "providers.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *app.Config) { c.OIDCProvidersFile = file }
}

// browser is a person's browser at the provider: it follows the provider's redirects and
// stops at the redirect to Plinth's callback, as a browser would hand it to the gateway.
type browser struct {
	t      testing.TB
	client *http.Client
}

func newBrowser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Port() == "9" { // Plinth's callback: hand it back
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return &browser{t: t, client: c}
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signInAt follows authURL to the provider's login page, signs in as user with password, and
// returns the callback URL the provider redirected to (with code and state).
func (b *browser) signInAt(authURL, user, password string) *url.URL {
	b.t.Helper()
	resp, err := b.client.Get(authURL)
	if err != nil {
		b.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginID.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		b.t.Fatalf("the provider's login page: %s %s", resp.Status, page)
	}
	form := url.Values{"id": {string(m[1])}, "username": {user}, "password": {password}}
	resp, err = b.client.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/login", form)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("signing in at the provider: %s", resp.Status)
	}
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || cb.Query().Get("code") == "" || cb.Query().Get("state") == "" {
		b.t.Fatalf("the provider redirected to %q, want the callback with code and state", resp.Header.Get("Location"))
	}
	return cb
}

// begin asks auth to begin a sign-in at testop to come back to redirect.
func begin(t testing.TB, ctx context.Context, c oidcpb.OIDCServiceClient, redirect string) *oidcpb.BeginSignInResponse {
	t.Helper()
	b, err := c.BeginSignIn(ctx, &oidcpb.BeginSignInRequest{Provider: "testop", RedirectUri: redirect})
	if err != nil {
		t.Fatalf("BeginSignIn: %v", err)
	}
	return b
}

// callbackOf is the provider's callback as CompleteSignIn takes it.
func callbackOf(cb *url.URL) *oidcpb.CompleteSignInRequest {
	redirect := *cb
	redirect.RawQuery = ""
	return &oidcpb.CompleteSignInRequest{Code: cb.Query().Get("code"), State: cb.Query().Get("state"), RedirectUri: redirect.String()}
}

// signIn runs the whole flow for user at the provider and completes it with auth.
func signIn(t testing.TB, ctx context.Context, c oidcpb.OIDCServiceClient, user, password string) (*oidcpb.CompleteSignInResponse, error) {
	t.Helper()
	b := begin(t, ctx, c, callbackURL)
	cb := newBrowser(t).signInAt(b.GetAuthorizationUrl(), user, password)
	return c.CompleteSignIn(ctx, callbackOf(cb))
}

// counts are the users of providers, and all tokens, in the test's schema.
func (e *env) oidcCounts(t testing.TB) (users, tokens int) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctxT(t), `SELECT (SELECT count(*) FROM users WHERE oidc_provider IS NOT NULL), (SELECT count(*) FROM tokens)`).Scan(&users, &tokens); err != nil {
		t.Fatal(err)
	}
	return users, tokens
}

// exec runs SQL in the test's schema.
func (e *env) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctxT(t), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// assertNoOIDCSecrets fails when a log line holds the client secret, a provider's password,
// or one of the codes and states of the test.
func (e *env) assertNoOIDCSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	secrets = append(secrets, clientSecret, "alice-op-password", "olga-op-password", "bob-op-password")
	for _, line := range strings.Split(e.logs.String(), "\n") {
		for _, s := range secrets {
			if s != "" && strings.Contains(line, s) {
				t.Errorf("secret %q in log line: %s", s, line)
			}
		}
	}
}
