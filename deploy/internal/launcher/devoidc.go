package launcher

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// `make up -dev-oidc` runs auth's local OpenID provider (`auth dev-oidc`, a real OP:
// zitadel/oidc's op package) beside the suite and makes it auth's provider "dev", so OpenID
// sign-in can be tried on one machine: the console's "Sign in with Dev" and Koor's login
// button. Every start writes new credentials; nothing of it is meant for production.
const (
	// devOIDCPort is the provider's port (shifted by the port offset): in the launcher's
	// 7000s beside the services', below the range of binaries the table does not know.
	devOIDCPort = 7008
	// DevOIDCFile is the provider's users and clients (auth dev-oidc's -file), in the home.
	DevOIDCFile = "dev-oidc.json"
	// devOIDCDir holds what auth reads of it: the client secret and the providers file.
	devOIDCDir = "dev-oidc"
	// DevOIDCUser is the provider's one user, in the group that maps to Plinth's admin.
	DevOIDCUser = "dev"
	// devOIDCProvider is the provider's name in auth (and in the gateway's routes).
	devOIDCProvider = "dev"
	devOIDCClientID = "plinth"
	devOIDCGroup    = "plinth-admins"
)

// devOIDCConfig is auth dev-oidc's file (services/auth/internal/oidctest.Config).
type devOIDCConfig struct {
	Users   []devOIDCUser   `json:"users"`
	Clients []devOIDCClient `json:"clients"`
}

type devOIDCUser struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

type devOIDCClient struct {
	ID           string   `json:"id"`
	Secret       string   `json:"secret"`
	RedirectURIs []string `json:"redirect_uris"`
}

// oidcProviders is auth's providers file (PLINTH_AUTH_OIDC_PROVIDERS_FILE).
type oidcProviders struct {
	Providers []oidcProvider `json:"providers"`
}

type oidcProvider struct {
	Name             string            `json:"name"`
	Label            string            `json:"label"`
	Issuer           string            `json:"issuer"`
	ClientID         string            `json:"client_id"`
	ClientSecretFile string            `json:"client_secret_file"`
	Scopes           []string          `json:"scopes"`
	RedirectURLs     []string          `json:"redirect_urls"`
	RoleClaim        string            `json:"role_claim"`
	Roles            map[string]string `json:"roles"`
}

// devOIDCAddr is the provider's address under this configuration.
func devOIDCAddr(c Config) string { return loopback(devOIDCPort + c.PortOffset) }

// devOIDCProvidersFile is auth's providers file when -dev-oidc is set.
func devOIDCProvidersFile(home string) string {
	return filepath.Join(home, devOIDCDir, "providers.json")
}

// devOIDCRedirects are the callbacks registered at the provider and in auth: the gateway's
// console route on its own address and, when the user runs the gateway's Koor listener
// (PLINTH_GATEWAY_KOOR_ADDR), Koor's. A browser must use these origins (127.0.0.1, not
// localhost): auth accepts no other redirect.
func devOIDCRedirects(c Config, placed map[string]Placement) []string {
	var out []string
	if gw, ok := placed[GatewayBinary]; ok && gw.GRPC != "" {
		out = append(out, "http://"+gw.GRPC+"/auth/oidc/callback")
	}
	if koor := environValue(c.Environ, envGatewayKoorAddr); koor != "" {
		if host, port, err := net.SplitHostPort(koor); err == nil {
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = "127.0.0.1"
			}
			out = append(out, "http://"+net.JoinHostPort(host, port)+"/api/oauth2/callback/"+devOIDCProvider)
		}
	}
	return out
}

// environValue is the last value of key in environ (as a shell takes it).
func environValue(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// writeDevOIDC writes the provider's file, the client secret and auth's providers file, with
// a new user password and client secret, and returns the user's password.
func writeDevOIDC(c Config, placed map[string]Placement) (string, error) {
	redirects := devOIDCRedirects(c, placed)
	if len(redirects) == 0 {
		return "", errors.New("-dev-oidc: no gateway runs, so no sign-in could come back: the provider's callbacks are the gateway's")
	}
	password, secret := rand.Text(), rand.Text()
	op := devOIDCConfig{
		Users:   []devOIDCUser{{Username: DevOIDCUser, Password: password, Email: DevOIDCUser + "@plinth.localhost", Groups: []string{devOIDCGroup}}},
		Clients: []devOIDCClient{{ID: devOIDCClientID, Secret: secret, RedirectURIs: redirects}},
	}
	if err := writeHomeJSON(c.Home, DevOIDCFile, op); err != nil {
		return "", err
	}
	dir := filepath.Join(c.Home, devOIDCDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	secretFile := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the dev provider's client secret: %w", err)
	}
	providers := oidcProviders{Providers: []oidcProvider{{
		Name: devOIDCProvider, Label: "Dev", Issuer: "http://" + devOIDCAddr(c),
		ClientID: devOIDCClientID, ClientSecretFile: secretFile,
		Scopes: []string{"openid", "profile", "email", "groups"}, RedirectURLs: redirects,
		RoleClaim: "groups", Roles: map[string]string{devOIDCGroup: "admin"},
	}}}
	if err := writeHomeJSON(dir, filepath.Base(devOIDCProvidersFile(c.Home)), providers); err != nil {
		return "", err
	}
	return password, nil
}

// startDevOIDC writes the dev provider's files and runs `auth dev-oidc` (HOME/bin/auth) until
// the session closes, waiting for its discovery document; auth, started after it, reads the
// providers file (authEnv). The user's password is said once, like auth's first admin's.
func (s *session) startDevOIDC(ctx context.Context, c Config, placed []Placement) error {
	if !c.DevOIDC {
		return nil
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	if _, ok := byName["auth"]; !ok {
		return errors.New("-dev-oidc needs auth, which is not under services/")
	}
	addr := devOIDCAddr(c)
	if !portFree(devOIDCPort + c.PortOffset) {
		return fmt.Errorf("port %d for the dev OpenID provider is in use: stop what listens there, or run with -port-offset N", devOIDCPort+c.PortOffset)
	}
	password, err := writeDevOIDC(c, byName)
	if err != nil {
		return err
	}
	// Only the basics of the launcher's environment: the provider reads no Plinth setting
	// but its flags, and would warn about the others.
	var env []string
	for _, kv := range c.Environ {
		if !strings.HasPrefix(kv, "PLINTH_") {
			env = append(env, kv)
		}
	}
	ch, err := startChild("dev-oidc", filepath.Join(c.Home, "bin", "auth"), env, c.Root, s.con.Writer("dev-oidc"),
		"dev-oidc", "-addr", addr, "-file", filepath.Join(c.Home, DevOIDCFile))
	if err != nil {
		return err
	}
	s.onClose(func() error {
		stopChildren([]*child{ch}, c.StopTimeout, s.force, s.self)
		return nil
	})
	if err := waitDiscovery(ctx, ch, "http://"+addr, c.ReadyTimeout); err != nil {
		return err
	}
	s.self("dev OpenID provider: http://%s — \"Sign in with Dev\" as %s / %s (an admin; a new password each start)", addr, DevOIDCUser, password)
	return nil
}

// waitDiscovery polls the provider's discovery document until it answers 200.
func waitDiscovery(ctx context.Context, ch *child, issuer string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := issuer + "/.well-known/openid-configuration"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ch.done:
			return fmt.Errorf("the dev OpenID provider exited before it served (%v); its output is above", ch.err)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the dev OpenID provider did not serve %s within %s; its output is above", url, timeout)
			}
			return ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
	}
}
