package envoygen

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
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
			checkAPITwins(t, g.Routes())
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
			plain := "/" + name + "/" + string(md.Name())
			want, ok := routes.Lookup(plain)
			if !ok { // a gateway-level service
				want = routes.Route{Backend: routes.Auth, Access: routes.Public}
			}
			// Koor's UI calls every method under /api too: the same route, the backend sees
			// the plain path.
			for _, path := range []string{plain, routes.APIPrefix + plain} {
				got, ok, err := g.Route(path)
				if err != nil || !ok {
					t.Errorf("%s: not routed (%v)", path, err)
					continue
				}
				rt, _, _ := g.Match(path)
				if up, err := configcheck.UpstreamPath(rt, path); err != nil || up != plain {
					t.Errorf("%s reaches %s as %s (%v), want %s", path, got.Cluster, up, err, plain)
				}
				if got.Cluster != want.Backend || got.Authorized != (want.Access == routes.Token) {
					t.Errorf("%s: routed %+v, the table says %s %s", path, got, want.Backend, want.Access)
				}
				timeout, idle := rt.GetRoute().GetTimeout(), rt.GetRoute().GetIdleTimeout()
				if md.IsStreamingClient() || md.IsStreamingServer() {
					if timeout == nil || timeout.AsDuration() != 0 || idle == nil || idle.AsDuration() != 0 {
						t.Errorf("%s streams, but its route has timeout %v, idle_timeout %v (want 0s, 0s)", path, timeout, idle)
					}
				} else if timeout.AsDuration() <= 0 {
					t.Errorf("%s is unary, but its route has no timeout", path)
				}
				// A unary call's body is one message and its gRPC prefix: bounded by the
				// backend's limit. A stream's body is many messages over hours: the backend
				// checks each from its prefix, Envoy must not count their sum.
				n, limited, err := g.MaxRequestBytes(path)
				streams := md.IsStreamingClient() || md.IsStreamingServer()
				if wantN := uint64(routes.MaxRequestBytes(want.Backend) + grpcPrefixBytes); err != nil || limited == streams || (limited && n != wantN) {
					t.Errorf("%s (streaming %v): body limited %v to %d bytes (%v); want limited %v to %d", path, streams, limited, n, err, !streams, wantN)
				}
				checked++
			}
		}
	}
	if checked < 160 {
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
		"auth":  "auth:7011 /etc/plinth/auth-client/tls.crt /etc/plinth/auth-client/tls.key /etc/plinth/auth-client/ca.crt",
		"stats": "stats:7002", "kaas": "kaas:7003", "vagrant-server": "vagrant-server:7004",
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

// TestAuthOnlyOverItsGatewayListener: in every environment Envoy's auth cluster (ext_authz
// and auth's routes) dials auth's gateway listener with a client certificate, verifying the
// server name auth — the one channel on which auth believes the x-forwarded-for Envoy writes.
// A plaintext cluster would reach a listener that refuses it, or, on 7001, make every login
// count against the gateway's own address.
func TestAuthOnlyOverItsGatewayListener(t *testing.T) {
	for _, env := range Environments() {
		a := env.Backends[routes.Auth]
		if a.Host != routes.Auth || a.Port != AuthGatewayPort || a.TLS == nil || a.TLS.ServerName != routes.Auth {
			t.Errorf("%s: auth is dialled as %+v (TLS %+v), want %s:%d with mutual TLS, server name %s", env.File, a, a.TLS, routes.Auth, AuthGatewayPort, routes.Auth)
		}
	}
}

// checkAPITwins: every route has its routes.APIPrefix twin, the same in everything (backend,
// timeouts, per-filter configs: ext_authz, the body limit) but the match, and with the
// prefix_rewrite that gives the backend the route's own path; and nothing else is under it
// but Koor's plain endpoints, answered by Envoy.
func checkAPITwins(t *testing.T, rs []*routev3.Route) {
	t.Helper()
	for _, p := range apiTwinProblems(rs) {
		t.Error(p)
	}
}

func apiTwinProblems(rs []*routev3.Route) []string {
	var problems []string
	spec := func(rt *routev3.Route) (string, bool) {
		return rt.GetMatch().GetPath() + rt.GetMatch().GetPrefix(), rt.GetMatch().GetPrefix() != ""
	}
	twins := map[string]*routev3.Route{}
	for _, rt := range rs {
		if p, _ := spec(rt); strings.HasPrefix(p, routes.APIPrefix+"/") && rt.GetDirectResponse() == nil {
			twins[p] = rt
		}
	}
	plain := 0
	for _, rt := range rs {
		p, prefix := spec(rt)
		if strings.HasPrefix(p, routes.APIPrefix+"/") || rt.GetDirectResponse() != nil {
			continue
		}
		plain++
		twin, ok := twins[routes.APIPrefix+p]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no %s twin", p, routes.APIPrefix))
			continue
		}
		if _, tp := spec(twin); tp != prefix || twin.GetRoute().GetPrefixRewrite() != p {
			problems = append(problems, fmt.Sprintf("%s%s: prefix match %v, rewritten to %q; want prefix match %v, rewritten to %s", routes.APIPrefix, p, tp, twin.GetRoute().GetPrefixRewrite(), prefix, p))
		}
		a, b := proto.Clone(rt).(*routev3.Route), proto.Clone(twin).(*routev3.Route)
		a.Match, b.Match = nil, nil
		b.GetRoute().PrefixRewrite = ""
		if !proto.Equal(a, b) {
			problems = append(problems, fmt.Sprintf("%s and its twin differ:\n%v\n%v", p, a, b))
		}
	}
	if plain == 0 || len(twins) != plain {
		problems = append(problems, fmt.Sprintf("%d routes, %d routes under %s", plain, len(twins), routes.APIPrefix))
	}
	direct := 0
	for _, rt := range rs {
		if rt.GetDirectResponse() != nil {
			direct++
		}
	}
	if want := len(KoorEndpoints()); direct != want {
		problems = append(problems, fmt.Sprintf("%d direct answers, want Koor's %d endpoints", direct, want))
	}
	return problems
}

// TestAPITwinsCheckBites proves apiTwinProblems bites: a twin without its rewrite, or one
// that keeps /api on the way to the backend, is reported.
func TestAPITwinsCheckBites(t *testing.T) {
	doc, err := Render(Compose(), routes.Table, routes.GatewayServices)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new string }{
		{"no rewrite", `prefix_rewrite: "/stats.StatsService/", `, ""},
		{"wrong rewrite", `prefix_rewrite: "/stats.StatsService/"`, `prefix_rewrite: "/api/stats.StatsService/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(string(doc), tc.old, tc.new, 1)
			if broken == string(doc) {
				t.Fatalf("%q is not in the rendered file", tc.old)
			}
			b, err := configcheck.ParseEnvoy([]byte(broken))
			if err != nil {
				t.Fatal(err)
			}
			g, err := configcheck.NewGateway(b, "gateway")
			if err != nil {
				t.Fatal(err)
			}
			if len(apiTwinProblems(g.Routes())) == 0 {
				t.Error("a broken twin passes")
			}
		})
	}
}
