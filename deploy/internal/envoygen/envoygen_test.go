package envoygen

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("%s is not the repository root: %v", root, err)
	}
	return root
}

// TestCommittedFilesAreGenerated fails on drift: a hand edit of a generated file, or a route
// table change nobody regenerated.
func TestCommittedFilesAreGenerated(t *testing.T) {
	files, err := RenderAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("want the compose and the Kubernetes file, got %d", len(files))
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is not what the generator writes from services/gateway/routes (%v): run `%s` and commit the result", rel, err, RegenerateCommand)
		}
	}
}

// TestGeneratedConfigs checks each rendered file with configcheck (the Envoy v1.40 API,
// strictly) and then asks it, as Envoy would route, about every method of every service the
// table routes: the backend, whether ext_authz applies, and the timeouts.
func TestGeneratedConfigs(t *testing.T) {
	for _, env := range Environments() {
		t.Run(env.File, func(t *testing.T) {
			doc, err := Render(env, routes.Table, routes.GatewayServices)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(doc), "# GENERATED") || !strings.Contains(string(doc), RegenerateCommand) {
				t.Error("the header does not say the file is generated and how to regenerate it")
			}
			b, err := configcheck.ParseEnvoy(doc)
			if err != nil {
				t.Fatal(err)
			}
			g, err := configcheck.NewGateway(b, "gateway")
			if err != nil {
				t.Fatal(err)
			}
			checkEveryMethod(t, g)
			checkClusters(t, env, b.GetStaticResources().GetClusters())
		})
	}
}

func checkEveryMethod(t *testing.T, g *configcheck.Gateway) {
	t.Helper()
	type svc struct {
		backend string
		access  routes.Access
	}
	services := map[string]svc{}
	for _, r := range routes.Table {
		services[r.Service] = svc{r.Backend, r.Access}
	}
	for _, s := range routes.GatewayServices {
		services[s] = svc{routes.Auth, routes.Public}
	}
	checked := 0
	for name := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			t.Fatal(err)
		}
		sd := d.(protoreflect.ServiceDescriptor)
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			path := "/" + name + "/" + string(md.Name())
			want, ok := routes.Lookup(path)
			if !ok { // a gateway-level service
				want = routes.Route{Backend: routes.Auth, Access: routes.Public}
			}
			got, ok, err := g.Route(path)
			if err != nil || !ok {
				t.Errorf("%s: not routed (%v)", path, err)
				continue
			}
			if got.Cluster != want.Backend || got.Authorized != (want.Access == routes.Token) {
				t.Errorf("%s: routed %+v, the table says %s %s", path, got, want.Backend, want.Access)
			}
			rt, _, _ := g.Match(path)
			timeout, idle := rt.GetRoute().GetTimeout(), rt.GetRoute().GetIdleTimeout()
			if md.IsStreamingClient() || md.IsStreamingServer() {
				if timeout == nil || timeout.AsDuration() != 0 || idle == nil || idle.AsDuration() != 0 {
					t.Errorf("%s streams, but its route has timeout %v, idle_timeout %v (want 0s, 0s)", path, timeout, idle)
				}
			} else if timeout.AsDuration() <= 0 {
				t.Errorf("%s is unary, but its route has no timeout", path)
			}
			checked++
		}
	}
	if checked < 80 {
		t.Errorf("only %d methods checked: are the libs/api packages linked in?", checked)
	}
	for _, p := range []string{"/no.Such/Method", "/resources.stats.Nothing/Get"} {
		if got, ok, _ := g.Route(p); ok {
			t.Errorf("%s is routed to %+v", p, got)
		}
	}
}

func checkClusters(t *testing.T, env Environment, cs []*clusterv3.Cluster) {
	t.Helper()
	var names []string
	for _, c := range cs {
		names = append(names, c.GetName())
		want := env.Backends[c.GetName()]
		sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if sa.GetAddress() != want.Host || sa.GetPortValue() != want.Port {
			t.Errorf("cluster %s: %s:%d, want %s:%d", c.GetName(), sa.GetAddress(), sa.GetPortValue(), want.Host, want.Port)
		}
		ts := c.GetTransportSocket()
		if want.TLS == nil {
			if ts != nil {
				t.Errorf("cluster %s: TLS towards a plaintext backend", c.GetName())
			}
			continue
		}
		tc := &tlsv3.UpstreamTlsContext{}
		if ts == nil || ts.GetTypedConfig().UnmarshalTo(tc) != nil {
			t.Errorf("cluster %s: no upstream TLS for a mutual-TLS backend", c.GetName())
			continue
		}
		ctx := tc.GetCommonTlsContext()
		certs := ctx.GetTlsCertificates()
		if len(certs) != 1 || certs[0].GetCertificateChain().GetFilename() != want.TLS.CertFile || certs[0].GetPrivateKey().GetFilename() != want.TLS.KeyFile {
			t.Errorf("cluster %s: client pair %v, want %s and %s", c.GetName(), certs, want.TLS.CertFile, want.TLS.KeyFile)
		}
		vc := ctx.GetValidationContext()
		if vc.GetTrustedCa().GetFilename() != want.TLS.CAFile {
			t.Errorf("cluster %s: trusts %v, want %s", c.GetName(), vc.GetTrustedCa(), want.TLS.CAFile)
		}
		sans := vc.GetMatchTypedSubjectAltNames()
		if len(sans) != 1 || sans[0].GetMatcher().GetExact() != want.TLS.ServerName || tc.GetSni() != want.TLS.ServerName {
			t.Errorf("cluster %s: does not verify that the server is %s: %v", c.GetName(), want.TLS.ServerName, sans)
		}
		// Both bounds: Envoy's client default maximum is TLS 1.2, which the backends refuse.
		if tp := ctx.GetTlsParams(); tp.GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_3 || tp.GetTlsMaximumProtocolVersion() != tlsv3.TlsParameters_TLSv1_3 {
			t.Errorf("cluster %s: the backend speaks TLS 1.3 only", c.GetName())
		}
	}
	if want := routes.Backends(); !slices.Equal(names, want) {
		t.Errorf("clusters %v, want one per backend %v", names, want)
	}
}

// TestKubernetesAddressContract pins what deploy/k8s builds its manifests to.
func TestKubernetesAddressContract(t *testing.T) {
	env := Kubernetes()
	want := map[string]string{
		"auth": "auth:7001", "stats": "stats:7002", "kaas": "kaas:7003", "vagrant-server": "vagrant-server:7004",
		"lvmd-agent":   "lvmd-agent:7005 /etc/plinth/lvmd-client/tls.crt /etc/plinth/lvmd-client/tls.key /etc/plinth/lvmd-client/ca.crt",
		"cnpgi-plugin": "cnpgi-plugin:7006 /etc/plinth/cnpgi-client/tls.crt /etc/plinth/cnpgi-client/tls.key /etc/plinth/cnpgi-client/ca.crt",
	}
	for b, w := range want {
		a := env.Backends[b]
		got := fmt.Sprintf("%s:%d", a.Host, a.Port)
		if a.TLS != nil {
			got += " " + a.TLS.CertFile + " " + a.TLS.KeyFile + " " + a.TLS.CAFile
		}
		if got != w {
			t.Errorf("%s: %s, want %s", b, got, w)
		}
	}
}
