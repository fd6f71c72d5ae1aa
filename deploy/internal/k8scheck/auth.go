package k8scheck

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// auth's settings that decide whose x-forwarded-for it believes.
const (
	authTrustedProxies = "PLINTH_AUTH_TRUSTED_PROXIES"
	authGatewayAddr    = "PLINTH_AUTH_GATEWAY_ADDR"
	authGatewayCert    = "PLINTH_AUTH_GATEWAY_TLS_CERT"
	authGatewayKey     = "PLINTH_AUTH_GATEWAY_TLS_KEY"
	authGatewayCA      = "PLINTH_AUTH_GATEWAY_TLS_CLIENT_CA"
)

// AuthGatewayBackend is the Contract entry of auth: the gateway reaches auth's gateway
// listener with the client pair that is the gateway's identity there.
func AuthGatewayBackend() Backend {
	i := slices.IndexFunc(Contract, func(b Backend) bool { return b.Service == "auth" })
	return Contract[i]
}

// CheckAuthGateway checks that auth believes x-forwarded-for only from the gateway over mutual
// TLS, never from an address: auth's container sets no PLINTH_AUTH_TRUSTED_PROXIES (a pod
// network CIDR lets every pod forge a client address: lock users out, dodge login
// throttling); it serves PLINTH_AUTH_GATEWAY_ADDR on the port of Contract's auth entry, which
// it declares and the auth Service serves; the listener's certificate, key and client CA are
// tls.crt, tls.key and ca.crt of a mounted Secret that a Certificate writes with the dnsName
// "auth" and usage "server auth", from the issuer that signs the gateway's client pair (so
// ca.crt is the CA of exactly that pair); and no workload but the gateway mounts that pair.
func CheckAuthGateway(s *Set) []error {
	be := AuthGatewayBackend()
	w, err := s.Workload("Deployment", "auth")
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{w}, args...)...))
	}
	i := slices.IndexFunc(w.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "auth" })
	if i < 0 {
		fail("no container auth")
		return errs
	}
	c := w.Template.Spec.Containers[i]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Name == authTrustedProxies {
			fail("%s is set: auth would believe x-forwarded-for from every pod of those networks; the gateway reaches the gateway listener with mutual TLS instead", authTrustedProxies)
		}
	}
	host, port, err := net.SplitHostPort(env[authGatewayAddr])
	if err != nil || (host != "0.0.0.0" && host != "") || port != strconv.Itoa(int(be.Port)) {
		fail("%s = %q, want 0.0.0.0:%d (the port the gateway dials)", authGatewayAddr, env[authGatewayAddr], be.Port)
	}
	if !declaresPortNumber(c, int32(be.Port)) {
		fail("container %q declares no port %d", c.Name, be.Port)
	}
	if svc, err := s.Service("auth"); err != nil {
		errs = append(errs, err)
	} else if !servesPort(svc, be.Port) {
		errs = append(errs, fmt.Errorf("%s: no port %d (auth's gateway listener)", svc, be.Port))
	}
	errs = append(errs, checkAuthGatewayTLS(s, w, c, env, be)...)
	for _, o := range s.Workloads {
		if o.GetName() == gatewayName && o.GetKind() == gatewayKind {
			continue
		}
		for _, r := range podRefs(o.String(), o.GetNamespace(), o.Template.Spec) {
			if r.Kind == "Secret" && r.Name == be.Secret {
				errs = append(errs, fmt.Errorf("%s mounts Secret %s, the gateway's identity at auth: its x-forwarded-for would be believed", o, be.Secret))
				break
			}
		}
	}
	return errs
}

// checkAuthGatewayTLS checks the gateway listener's files against the Secret mounted there.
func checkAuthGatewayTLS(s *Set, w Workload, c corev1.Container, env map[string]string, be Backend) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{w}, args...)...))
	}
	dir := path.Dir(env[authGatewayCert])
	for k, key := range map[string]string{authGatewayCert: "tls.crt", authGatewayKey: "tls.key", authGatewayCA: "ca.crt"} {
		if env[k] != path.Join(dir, key) {
			fail("%s = %q, want %s of the server Secret mounted at %s", k, env[k], key, dir)
		}
	}
	src, ok := mountSources(w.Template.Spec, c)[dir]
	if !ok || src.kind != "Secret" {
		fail("no Secret mounted at %s (%s)", dir, authGatewayCert)
		return errs
	}
	server, ok := certificateFor(s, src.name)
	if !ok {
		fail("no cert-manager Certificate writes Secret %s (mounted at %s)", src.name, dir)
		return errs
	}
	client, ok := certificateFor(s, be.Secret)
	if !ok {
		fail("no cert-manager Certificate writes Secret %s (the gateway's client pair)", be.Secret)
		return errs
	}
	if issuerOf(server) != issuerOf(client) {
		fail("the gateway listener trusts the CA of %s (issuer %s), but the gateway's pair %s is from issuer %s", src.name, issuerOf(server), be.Secret, issuerOf(client))
	}
	if !serverCertificate(s, issuerOf(server), "auth") {
		fail("no Certificate from issuer %s names auth with usage \"server auth\": the gateway verifies that name", issuerOf(server))
	}
	return errs
}
