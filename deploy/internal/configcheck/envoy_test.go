package configcheck

import (
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// envoyFile is the gateway config of docker-compose.yaml, k8sEnvoyFile that of deploy/k8s; both
// are generated from services/gateway/routes (deploy/internal/envoygen).
const (
	envoyFile    = "deploy/envoy/envoy.yaml"
	k8sEnvoyFile = "deploy/k8s/base/gateway/envoy.yaml"
)

// envoyFiles are every Envoy config of the repository: each passes every check below.
var envoyFiles = []string{envoyFile, k8sEnvoyFile}

func TestEnvoyConfigIsValid(t *testing.T) {
	for _, f := range envoyFiles {
		t.Run(f, func(t *testing.T) { checkEnvoyConfig(t, f) })
	}
}

func checkEnvoyConfig(t *testing.T, file string) {
	b, err := ParseEnvoy(readRepoFile(t, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 1 || ls[0].GetAddress().GetSocketAddress().GetPortValue() != 8080 {
		t.Fatalf("want one listener on 8080 (the gateway port), got %v", ls)
	}
	g, err := NewGateway(b, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	if !g.hcm.GetUseRemoteAddress().GetValue() {
		t.Error("use_remote_address is off: x-forwarded-for would not carry the client address to auth")
	}
	authz, err := g.ExtAuthz()
	if err != nil || authz == nil {
		t.Fatalf("no ext_authz filter (%v)", err)
	}
	if c := authz.GetGrpcService().GetEnvoyGrpc().GetClusterName(); c != "auth" {
		t.Errorf("ext_authz asks cluster %q, want auth's gRPC Authorization service", c)
	}
	if authz.GetFailureModeAllow() {
		t.Error("ext_authz lets calls through when auth is down")
	}

	auth := cluster(t, b.GetStaticResources().GetClusters(), "auth")
	sa := auth.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if sa.GetAddress() != "auth" || sa.GetPortValue() != 7001 {
		t.Errorf("auth cluster points at %s:%d, want auth:7001", sa.GetAddress(), sa.GetPortValue())
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		opts := &upstreamhttpv3.HttpProtocolOptions{}
		a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
		if a == nil || a.UnmarshalTo(opts) != nil || opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
			t.Errorf("cluster %s does not speak HTTP/2 upstream: gRPC needs it", c.GetName())
		}
	}
}

func cluster(t *testing.T, cs []*clusterv3.Cluster, name string) *clusterv3.Cluster {
	t.Helper()
	i := slices.IndexFunc(cs, func(c *clusterv3.Cluster) bool { return c.GetName() == name })
	if i < 0 {
		t.Fatalf("no cluster %s", name)
	}
	return cs[i]
}

// authPublicPaths mirrors DefaultPublicPaths in services/auth/internal/grpc/extauthz_server.go
// (another module's internal package): the gateway lets exactly these through without a token,
// as auth's ext_authz server would.
func authPublicPaths() []string {
	return []string{
		"/services.auth.AuthService/Login",
		"/services.auth.AuthService/CheckToken",
		"/grpc.health.v1.Health/",
		"/grpc.reflection.v1.ServerReflection/",
		"/grpc.reflection.v1alpha.ServerReflection/",
	}
}

func TestGatewayRoutes(t *testing.T) {
	for _, f := range envoyFiles {
		t.Run(f, func(t *testing.T) { checkGatewayRoutes(t, f) })
	}
}

func checkGatewayRoutes(t *testing.T, file string) {
	b, err := ParseEnvoy(readRepoFile(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(b, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want GatewayRoute
	}{
		{"/services.auth.AuthService/Login", GatewayRoute{"auth", false}},
		{"/services.auth.AuthService/CheckToken", GatewayRoute{"auth", false}},
		{"/services.auth.AuthService/Logout", GatewayRoute{"auth", true}},
		// Exact paths: a method merely starting with Login is not public.
		{"/services.auth.AuthService/LoginAs", GatewayRoute{"auth", true}},
		{"/grpc.health.v1.Health/Check", GatewayRoute{"auth", false}},
		{"/grpc.health.v1.Health/Watch", GatewayRoute{"auth", false}},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", GatewayRoute{"auth", false}},
		{"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", GatewayRoute{"auth", false}},
		{"/stats.StatsService/GetStats", GatewayRoute{"stats", true}},
		{"/proto.VGService/Watch", GatewayRoute{"lvmd-agent", true}},
		{"/cnpgi.wal.v1.WAL/Archive", GatewayRoute{"cnpgi-plugin", true}},
		{"/cnct.kaas.api.Cluster/CreateCluster", GatewayRoute{"kaas", true}},
		{"/hashicorp.vagrant.Vagrant/GetVersionInfo", GatewayRoute{"vagrant-server", false}},
	} {
		got, ok, err := g.Route(tc.path)
		if err != nil || !ok || got != tc.want {
			t.Errorf("%s: got %+v (matched %v, %v), want %+v", tc.path, got, ok, err, tc.want)
		}
	}
	if got, ok, err := g.Route("/unknown.Service/Method"); ok || err != nil {
		t.Errorf("an unknown service is routed: %+v %v", got, err)
	}
}

// TestGatewayPublicRoutesAreAuthsPublicPaths: every route that skips ext_authz towards auth is
// one of auth's public paths, and each of those paths is reachable without a token.
func TestGatewayPublicRoutesAreAuthsPublicPaths(t *testing.T) {
	for _, f := range envoyFiles {
		t.Run(f, func(t *testing.T) { checkPublicRoutes(t, f) })
	}
}

func checkPublicRoutes(t *testing.T, file string) {
	b, err := ParseEnvoy(readRepoFile(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(b, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range authPublicPaths() {
		probe := p
		if strings.HasSuffix(p, "/") {
			probe += "AnyMethod"
		}
		got, ok, err := g.Route(probe)
		if err != nil || !ok || got != (GatewayRoute{"auth", false}) {
			t.Errorf("auth's public path %s: got %+v (matched %v, %v), want auth without ext_authz", p, got, ok, err)
		}
	}
	for _, rt := range virtualHost(g.hcm.GetRouteConfig(), "*").GetRoutes() {
		spec := rt.GetMatch().GetPath() + rt.GetMatch().GetPrefix()
		got, _, err := g.Route(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got.Cluster == "auth" && !got.Authorized && !isAuthPublicPath(spec) {
			t.Errorf("route %s skips ext_authz but is not one of auth's public paths", spec)
		}
	}
}

// isAuthPublicPath applies auth's rule for PLINTH_AUTH_PUBLIC_PATHS: a path is public when it
// equals an entry, or when an entry ending in "/" is its prefix (e.g. Health/Watch, a streaming
// method the gateway routes on its own).
func isAuthPublicPath(p string) bool {
	return slices.ContainsFunc(authPublicPaths(), func(pub string) bool {
		return p == pub || (strings.HasSuffix(pub, "/") && strings.HasPrefix(p, pub))
	})
}

// TestEnvoyRejects proves the checks bite: each broken copy of envoy.yaml must be refused.
func TestEnvoyRejects(t *testing.T) {
	src := readRepoFile(t, envoyFile)
	for _, tc := range []struct{ name, old, new, want string }{
		{"route to an unknown cluster", "route: {cluster: stats,", "route: {cluster: statz,",
			`cluster "statz" is not in static_resources.clusters`},
		{"ext_authz on an unknown cluster", "envoy_grpc: {cluster_name: auth}", "envoy_grpc: {cluster_name: authz}",
			`cluster "authz" is not in static_resources.clusters`},
		{"misspelt field", "use_remote_address: true", "use_remote_adress: true", "does not match the Envoy v3 API"},
		{"unknown extension type", "grpc_web.v3.GrpcWeb", "grpc_web.v3.GrpcWebz", "does not match the Envoy v3 API"},
		{"top-level rule", "port_value: 8080", "port_value: 70000", "PortValue"},
		{"rule inside a filter's typed_config", "stat_prefix: gateway", `stat_prefix: ""`, "StatPrefix"},
		{"rule inside a cluster's protocol options", "explicit_http_config: {http2_protocol_options: {}}", "explicit_http_config: {}",
			"ProtocolConfig"},
		{"rule in a per-filter config inside the connection manager", `{safe_regex: {regex: ".*"}}`, `{safe_regex: {regex: ""}}`,
			"Regex"},
		{"per-filter config for no filter", "envoy.filters.http.ext_authz:\n", "envoy.filters.http.extauthz:\n",
			`"envoy.filters.http.extauthz" names no configured HTTP filter`},
		{"router not last", "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
			"type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors", "router filter last"},
		{"deprecated field", `domains: ["*"]`, "domains: [\"*\"]\n                      cors: {allow_methods: GET}",
			"deprecated"},
		{"cluster defined twice", "- name: kaas", "- name: stats", `cluster "stats" is defined twice`},
		{"not YAML", "static_resources:", "static_resources: [", "is not YAML"},
		{"rule inside an upstream TLS context", "tls_minimum_protocol_version: TLSv1_3", "tls_minimum_protocol_version: TLSv9",
			"does not match the Envoy v3 API"},
		{"duration Envoy cannot read", "timeout: 60s", "timeout: 1m", "invalid google.protobuf.Duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnvoy(mutate(t, src, tc.old, tc.new))
			wantErr(t, err, tc.want)
		})
	}
}
