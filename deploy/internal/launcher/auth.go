package launcher

// authEnv makes auth believe the gateway's x-forwarded-for: under make up every call comes
// through the gateway on 127.0.0.1, which appends the caller's address, so per-address
// lockout counts the browser's address instead of 127.0.0.1 for everyone.
func authEnv(string, map[string]Placement) map[string]string {
	return map[string]string{envAuthTrustedProxies: "127.0.0.1/32"}
}
