package envoygen

import (
	"fmt"
	"path"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Environment is where the gateway runs: the file it is written to and how Envoy reaches
// each backend.
type Environment struct {
	// Name says where the file is used, in its header.
	Name string
	// File is the output, relative to the repository root.
	File string
	// Backends maps every routes backend to its address.
	Backends map[string]Address
}

// Address is how Envoy reaches one backend: HTTP/2 to host:port, plaintext or with mutual TLS.
type Address struct {
	Host string
	Port uint32
	// TLS, when set, makes the cluster present a client certificate and verify the backend's.
	TLS *ClientTLS
}

// ClientTLS is the client side of a backend's mutual TLS, as files inside the Envoy
// container.
type ClientTLS struct {
	// CertFile and KeyFile are the client pair Envoy presents.
	CertFile, KeyFile string
	// CAFile holds the certificate(s) the backend's server certificate must chain to.
	CAFile string
	// ServerName is sent as SNI and must be a DNS name in the server certificate.
	ServerName string
}

// Ports are the suite's fixed gRPC ports, the same in every environment (ARCHITECTURE.md).
var Ports = map[string]uint32{
	routes.Auth:          7001,
	routes.Stats:         7002,
	routes.Kaas:          7003,
	routes.VagrantServer: 7004,
	routes.LvmdAgent:     7005,
	routes.CNPGIPlugin:   7006,
}

// AuthGatewayPort is auth's gateway listener (PLINTH_AUTH_GATEWAY_ADDR): the gateway's alone,
// mutual TLS with the gateway's client pair, the only channel on which auth believes the
// x-forwarded-for it counts failed logins by. Envoy's auth cluster (ext_authz and auth's own
// routes) dials it in every environment; the other services call auth on Ports[routes.Auth].
const AuthGatewayPort = 7011

// gatewayPort is the port the gateway dials backend b on.
func gatewayPort(b string) uint32 {
	if b == routes.Auth {
		return AuthGatewayPort
	}
	return Ports[b]
}

// ComposeCertDir is where the gateway container of docker-compose.yaml mounts the generated
// certificates (the compose volume `certs`): one directory per mutual-TLS backend, as
// `cnpgi-plugin gen-certs -dir <dir>/<backend>` writes it (server.crt, client.crt, client.key).
const ComposeCertDir = "/etc/plinth/certs"

// Compose is docker-compose.yaml: backends by compose service name; lvmd-agent, cnpgi-plugin
// and auth's gateway listener with the self-signed pairs the compose `init` service generates
// at first start.
func Compose() Environment {
	env := Environment{Name: "docker-compose (docker-compose.yaml)", File: "deploy/envoy/envoy.yaml", Backends: map[string]Address{}}
	for _, b := range routes.Backends() {
		a := Address{Host: b, Port: gatewayPort(b)}
		if b == routes.LvmdAgent || b == routes.CNPGIPlugin || b == routes.Auth {
			dir := path.Join(ComposeCertDir, b)
			// gen-certs makes self-signed leaves: the server's own certificate is its trust anchor.
			a.TLS = &ClientTLS{CertFile: path.Join(dir, "client.crt"), KeyFile: path.Join(dir, "client.key"), CAFile: path.Join(dir, "server.crt"), ServerName: b}
		}
		env.Backends[b] = a
	}
	return env
}

// KubernetesClientSecrets maps a mutual-TLS backend to the Secret holding Envoy's client pair
// and the directory the gateway Deployment mounts it at (keys tls.crt, tls.key, ca.crt).
var KubernetesClientSecrets = map[string]struct{ Secret, Dir string }{
	routes.Auth:        {"auth-gateway-client-tls", "/etc/plinth/auth-client"},
	routes.LvmdAgent:   {"lvmd-agent-client-tls", "/etc/plinth/lvmd-client"},
	routes.CNPGIPlugin: {"cnpgi-plugin-client-tls", "/etc/plinth/cnpgi-client"},
}

// Kubernetes is deploy/k8s: backends by Service name in the gateway's namespace; ca.crt of
// each client Secret must be the CA the backend's server certificate chains to, and that
// certificate must name the Service (the SAN Envoy verifies). auth is dialled on its gateway
// listener, whose client CA is the one of auth-gateway-client-tls.
func Kubernetes() Environment {
	env := Environment{Name: "Kubernetes (deploy/k8s, mounted at /etc/envoy/envoy.yaml)", File: "deploy/k8s/base/gateway/envoy.yaml", Backends: map[string]Address{}}
	for _, b := range routes.Backends() {
		a := Address{Host: b, Port: gatewayPort(b)}
		if s, ok := KubernetesClientSecrets[b]; ok {
			a.TLS = &ClientTLS{CertFile: path.Join(s.Dir, "tls.crt"), KeyFile: path.Join(s.Dir, "tls.key"), CAFile: path.Join(s.Dir, "ca.crt"), ServerName: b}
		}
		env.Backends[b] = a
	}
	return env
}

// Environments are every file the generator writes.
func Environments() []Environment { return []Environment{Compose(), Kubernetes()} }

// check refuses an environment that lacks an address for a backend the routes use.
func (e Environment) check(backends []string) error {
	for _, b := range backends {
		a, ok := e.Backends[b]
		if !ok || a.Host == "" || a.Port == 0 {
			return fmt.Errorf("%s: no address for backend %s", e.File, b)
		}
		if t := a.TLS; t != nil && (t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" || t.ServerName == "") {
			return fmt.Errorf("%s: backend %s: mutual TLS needs a client pair, a CA and a server name", e.File, b)
		}
	}
	return nil
}
