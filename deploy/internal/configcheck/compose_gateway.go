package configcheck

import (
	"fmt"
	"net"

	"github.com/compose-spec/compose-go/v2/types"
)

// The settings of auth's gateway listener and of the Go gateway's auth backend.
const (
	authTrustedProxies = "PLINTH_AUTH_TRUSTED_PROXIES"
	authGatewayAddr    = "PLINTH_AUTH_GATEWAY_ADDR"
	authAddr           = "PLINTH_AUTH_ADDR"
)

// authGatewayTLS are the files that make auth's TCP gateway listener mutual TLS: without all
// three auth refuses to start.
var authGatewayTLS = []string{"PLINTH_AUTH_GATEWAY_TLS_CERT", "PLINTH_AUTH_GATEWAY_TLS_KEY", "PLINTH_AUTH_GATEWAY_TLS_CLIENT_CA"}

// CheckGatewayTrust checks that auth believes x-forwarded-for only from a gateway that proved
// itself: auth trusts no proxy by its address (PLINTH_AUTH_TRUSTED_PROXIES unset: any
// container of the network, or a client of the published port, could otherwise name its
// victim's address), serves a gateway listener on a TCP port with mutual TLS, and every Go
// gateway (its PLINTH_AUTH_ADDR) dials auth on that port. Envoy's auth cluster is the
// generated config's (envoygen), whose test holds it to the same port.
func CheckGatewayTrust(p *types.Project) []error {
	auth, ok := p.Services["auth"]
	if !ok {
		return nil
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("service auth: "+format, args...))
	}
	env := func(s types.ServiceConfig, k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	if v := env(auth, authTrustedProxies); v != "" {
		fail("%s=%s trusts x-forwarded-for from an address; the gateways reach auth's gateway listener (%s) with mutual TLS instead", authTrustedProxies, v, authGatewayAddr)
	}
	addr := env(auth, authGatewayAddr)
	if addr == "" {
		fail("%s is not set: the gateways have no channel on which auth believes the client address they forward", authGatewayAddr)
		return errs
	}
	port, err := containerPort(addr)
	if err != nil || port == 0 {
		fail("%s=%s: want 0.0.0.0:<port>, which the gateway containers can reach (%v)", authGatewayAddr, addr, err)
		return errs
	}
	for _, k := range authGatewayTLS {
		if env(auth, k) == "" {
			fail("%s is not set: the gateway listener needs mutual TLS, the gateway's proof of identity", k)
		}
	}
	if publishes(auth, port) {
		fail("publishes the gateway listener's port %d: it is the gateways' alone", port)
	}
	for _, s := range p.Services {
		// Every binary that checks tokens names auth's address PLINTH_AUTH_ADDR; the other
		// binaries are not proxies and dial auth's own port.
		backend := env(s, authAddr)
		if backend == "" || binaryOf(s) != "gateway" {
			continue
		}
		host, bport, err := net.SplitHostPort(backend)
		if err != nil || host != "auth" || bport != fmt.Sprint(port) {
			errs = append(errs, fmt.Errorf("service %s: %s=%s, want auth:%d (auth's gateway listener: elsewhere auth takes the gateway for every client)", s.Name, authAddr, backend, port))
		}
	}
	return errs
}
