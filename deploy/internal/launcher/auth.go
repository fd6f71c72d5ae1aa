package launcher

import "path/filepath"

// authGatewaySocket is auth's gateway listener under make up: a unix socket of mode 0600 in
// the runtime home, so only the user running the suite (the gateway's) can connect, and auth
// believes the x-forwarded-for of its calls alone. A loopback address proves nothing: every
// local account connects from 127.0.0.1, so auth trusts no address as a proxy.
func authGatewaySocket(home string) string {
	return "unix://" + filepath.Join(home, "auth-gateway.sock")
}

// authEnv gives auth its gateway listener, so lockout counts the address the gateway names
// (the browser's) for logins through it, and the TCP peer for calls on auth's own port; with
// -dev-oidc, the dev OpenID provider as its provider "dev" (devoidc.go).
func authEnv(c Config, _ map[string]Placement) map[string]string {
	env := map[string]string{envAuthGatewayAddr: authGatewaySocket(c.Home)}
	if c.DevOIDC {
		env[envAuthOIDCProvidersFile] = devOIDCProvidersFile(c.Home)
	}
	return env
}
