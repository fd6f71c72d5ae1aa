package k8scheck

import (
	"fmt"
	"path"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck"
)

// Backend is one entry of the contract between the gateway's Envoy configuration and the
// Kubernetes objects: the Service and port a cluster dials, and for mutual TLS the directory
// the gateway's client pair (tls.crt, tls.key, ca.crt) is mounted at, from which Secret.
type Backend struct {
	Service   string
	Port      uint32
	ClientDir string // "" for plaintext h2c
	Secret    string
}

// Contract is the fixed agreement with the generator of deploy/k8s/base/gateway/envoy.yaml.
var Contract = []Backend{
	// auth's gateway listener: the one channel on which auth believes x-forwarded-for.
	{Service: "auth", Port: 7011, ClientDir: "/etc/plinth/auth-client", Secret: "auth-gateway-client-tls"},
	{Service: "stats", Port: 7002},
	{Service: "kaas", Port: 7003},
	{Service: "vagrant-server", Port: 7004},
	{Service: "lvmd-agent", Port: 7005, ClientDir: "/etc/plinth/lvmd-client", Secret: "lvmd-agent-client-tls"},
	{Service: "cnpgi-plugin", Port: 7006, ClientDir: "/etc/plinth/cnpgi-client", Secret: "cnpgi-plugin-client-tls"},
}

// Gateway contract constants: where Envoy listens, its admin address, its configuration file.
const (
	GatewayPort   = 8080
	EnvoyAdmin    = "127.0.0.1:9901"
	EnvoyConfig   = "/etc/envoy/envoy.yaml"
	envoyCfgKey   = "envoy.yaml"
	gatewayName   = "gateway"
	gatewayKind   = "Deployment"
	tlsSocketName = "envoy.transport_sockets.tls"
)

// CheckGateway checks the gateway Deployment and the Envoy configuration it mounts against
// Contract and against the rest of the build: the configuration is a valid Envoy bootstrap
// (configcheck.ParseEnvoy), mounted at EnvoyConfig from a ConfigMap of the build and named on
// Envoy's command line; it listens on GatewayPort, which the gateway Service serves, with its
// admin on EnvoyAdmin; every Envoy cluster dials a Service of the build on a port it serves,
// as Contract says; a TLS cluster presents a pair from the mounted client Secret, trusts its
// ca.crt, and expects a server name that a Certificate from the same issuer carries.
func CheckGateway(s *Set) []error {
	w, err := s.Workload(gatewayKind, gatewayName)
	if err != nil {
		return []error{err}
	}
	if len(w.Template.Spec.Containers) != 1 {
		return []error{fmt.Errorf("%s: want one container (envoy), have %d", w, len(w.Template.Spec.Containers))}
	}
	c := w.Template.Spec.Containers[0]
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{w}, args...)...))
	}

	if !slices.Contains(append(slices.Clone(c.Command), c.Args...), EnvoyConfig) {
		fail("envoy is not started with -c %s (command %q, args %q)", EnvoyConfig, c.Command, c.Args)
	}
	mounts := mountSources(w.Template.Spec, c)
	src, ok := mounts[path.Dir(EnvoyConfig)]
	if !ok || src.kind != "ConfigMap" {
		fail("no ConfigMap mounted at %s", path.Dir(EnvoyConfig))
		return errs
	}
	cm, ok := object(s, "ConfigMap", w.GetNamespace(), src.name)
	if !ok {
		fail("ConfigMap %q mounted at %s is not in the build", src.name, path.Dir(EnvoyConfig))
		return errs
	}
	cfg, _, _ := unstructured.NestedString(cm.Object, "data", envoyCfgKey)
	b, err := configcheck.ParseEnvoy([]byte(cfg))
	if err != nil {
		fail("%s in ConfigMap %q: %v", envoyCfgKey, src.name, err)
		return errs
	}
	if !declaresPortNumber(c, GatewayPort) {
		fail("container %q declares no port %d", c.Name, GatewayPort)
	}
	errs = append(errs, checkListeners(b)...)
	if svc, err := s.Service(gatewayName); err != nil {
		errs = append(errs, err)
	} else if !servesPort(svc, GatewayPort) {
		errs = append(errs, fmt.Errorf("%s: no port %d", svc, GatewayPort))
	}
	for _, be := range Contract {
		errs = append(errs, checkBackend(s, b, mounts, be)...)
	}
	return errs
}

func checkListeners(b *bootstrapv3.Bootstrap) []error {
	var errs []error
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 1 || ls[0].GetAddress().GetSocketAddress().GetPortValue() != GatewayPort {
		errs = append(errs, fmt.Errorf("envoy.yaml: want one listener on %d, have %d listeners", GatewayPort, len(ls)))
	}
	admin := b.GetAdmin().GetAddress().GetSocketAddress()
	if got := fmt.Sprintf("%s:%d", admin.GetAddress(), admin.GetPortValue()); got != EnvoyAdmin {
		errs = append(errs, fmt.Errorf("envoy.yaml: admin listens on %s, want %s (never outside the pod)", got, EnvoyAdmin))
	}
	return errs
}

func checkBackend(s *Set, b *bootstrapv3.Bootstrap, mounts map[string]mountSource, be Backend) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("envoy cluster %s: "+format, append([]any{be.Service}, args...)...))
	}
	i := slices.IndexFunc(b.GetStaticResources().GetClusters(), func(c *clusterv3.Cluster) bool { return c.GetName() == be.Service })
	if i < 0 {
		fail("missing")
		return errs
	}
	cl := b.GetStaticResources().GetClusters()[i]
	for _, eps := range cl.GetLoadAssignment().GetEndpoints() {
		for _, ep := range eps.GetLbEndpoints() {
			sa := ep.GetEndpoint().GetAddress().GetSocketAddress()
			if sa.GetAddress() != be.Service || sa.GetPortValue() != be.Port {
				fail("dials %s:%d, want the Service %s:%d", sa.GetAddress(), sa.GetPortValue(), be.Service, be.Port)
			}
		}
	}
	svc, err := s.Service(be.Service)
	if err != nil {
		fail("%v", err)
	} else if !servesPort(svc, be.Port) {
		fail("%s serves no port %d", svc, be.Port)
	}
	ts := cl.GetTransportSocket()
	if be.ClientDir == "" {
		if ts != nil {
			fail("has a transport socket %q; the backend speaks plaintext h2c", ts.GetName())
		}
		return errs
	}
	if ts.GetName() != tlsSocketName {
		fail("no TLS transport socket; the backend requires mutual TLS")
		return errs
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		fail("transport socket: %v", err)
		return errs
	}
	src, ok := mounts[be.ClientDir]
	if !ok || src.kind != "Secret" || src.name != be.Secret {
		fail("the gateway does not mount Secret %s at %s", be.Secret, be.ClientDir)
		return errs
	}
	cc := ctx.GetCommonTlsContext()
	if len(cc.GetTlsCertificates()) != 1 {
		fail("want one client certificate, have %d", len(cc.GetTlsCertificates()))
		return errs
	}
	files := map[string]string{
		"tls.crt": cc.GetTlsCertificates()[0].GetCertificateChain().GetFilename(),
		"tls.key": cc.GetTlsCertificates()[0].GetPrivateKey().GetFilename(),
		"ca.crt":  cc.GetValidationContext().GetTrustedCa().GetFilename(),
	}
	for key, file := range files {
		if want := path.Join(be.ClientDir, key); file != want {
			fail("%s is read from %q, want %q (Secret %s mounted at %s)", key, file, want, be.Secret, be.ClientDir)
		}
	}
	// The server name Envoy checks must be on the server's certificate, from the issuer that
	// signed the client pair (whose ca.crt Envoy trusts).
	client, ok := certificateFor(s, be.Secret)
	if !ok {
		fail("no cert-manager Certificate writes Secret %s", be.Secret)
		return errs
	}
	var names []string
	if sni := ctx.GetSni(); sni != "" {
		names = append(names, sni)
	}
	for _, m := range cc.GetValidationContext().GetMatchTypedSubjectAltNames() {
		if m.GetSanType() == tlsv3.SubjectAltNameMatcher_DNS && m.GetMatcher().GetExact() != "" {
			names = append(names, m.GetMatcher().GetExact())
		}
	}
	if len(names) == 0 {
		fail("checks no server name: any certificate of the CA would pass")
	}
	for _, n := range names {
		if !serverCertificate(s, issuerOf(client), n) {
			fail("expects server name %q, but no Certificate from issuer %q has it as a dnsName with usage \"server auth\"", n, issuerOf(client))
		}
	}
	return errs
}

type mountSource struct{ kind, name string }

// mountSources maps each mount path of the container to the Secret or ConfigMap behind it.
func mountSources(spec corev1.PodSpec, c corev1.Container) map[string]mountSource {
	vols := map[string]mountSource{}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			vols[v.Name] = mountSource{"Secret", v.Secret.SecretName}
		case v.ConfigMap != nil:
			vols[v.Name] = mountSource{"ConfigMap", v.ConfigMap.Name}
		}
	}
	out := map[string]mountSource{}
	for _, m := range c.VolumeMounts {
		if src, ok := vols[m.Name]; ok && m.SubPath == "" {
			out[path.Clean(m.MountPath)] = src
		}
	}
	return out
}

func declaresPortNumber(c corev1.Container, port int32) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == port })
}

func servesPort(svc Service, port uint32) bool {
	return slices.ContainsFunc(svc.Spec.Spec.Ports, func(p corev1.ServicePort) bool { return uint32(p.Port) == port })
}

func object(s *Set, kind, ns, name string) (Object, bool) {
	for _, o := range s.Objects {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o, true
		}
	}
	return Object{}, false
}

// certificateFor finds the cert-manager Certificate that writes the Secret.
func certificateFor(s *Set, secret string) (Object, bool) {
	for _, o := range s.Objects {
		if o.GVK().Group == "cert-manager.io" && o.GetKind() == "Certificate" {
			if n, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); n == secret {
				return o, true
			}
		}
	}
	return Object{}, false
}

func issuerOf(cert Object) string {
	kind, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if kind == "" {
		kind = "Issuer"
	}
	return kind + "/" + name
}

func serverCertificate(s *Set, issuer, dnsName string) bool {
	for _, o := range s.Objects {
		if o.GVK().Group != "cert-manager.io" || o.GetKind() != "Certificate" || issuerOf(o) != issuer {
			continue
		}
		dns, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
		usages, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "usages")
		if slices.Contains(dns, dnsName) && (len(usages) == 0 || slices.ContainsFunc(usages, func(u string) bool { return strings.EqualFold(u, "server auth") })) {
			return true
		}
	}
	return false
}
