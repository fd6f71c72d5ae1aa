package configcheck

import (
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/plinth-dev/plinth/services/gateway/routes"
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
	// auth's gateway listener, with the gateway's client certificate: the one channel on which
	// auth believes the x-forwarded-for Envoy writes.
	if sa.GetAddress() != "auth" || sa.GetPortValue() != 7011 || auth.GetTransportSocket() == nil {
		t.Errorf("auth cluster points at %s:%d (transport socket %v), want auth:7011 with mutual TLS", sa.GetAddress(), sa.GetPortValue(), auth.GetTransportSocket())
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
		"/api.services.auth.v1.AuthService/Login",
		"/api.services.auth.v1.AuthService/CheckToken",
		"/plinth.auth.v1.OIDCService/ListProviders",
		"/plinth.auth.v1.OIDCService/BeginSignIn",
		"/plinth.auth.v1.OIDCService/CompleteSignIn",
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
	g := gatewayOf(t, file)
	for _, tc := range []struct {
		path string
		want GatewayRoute
	}{
		{"/services.auth.AuthService/Login", GatewayRoute{"auth", false}},
		{"/services.auth.AuthService/CheckToken", GatewayRoute{"auth", false}},
		{"/api.services.auth.v1.AuthService/Login", GatewayRoute{"auth", false}},
		{"/api.services.auth.v1.AuthService/Logout", GatewayRoute{"auth", true}},
		{"/api.services.stats.v1.StatsService/GetClusterStats", GatewayRoute{"stats", true}},
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
	g := gatewayOf(t, file)
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
		if rt.GetDirectResponse() != nil { // Koor's endpoints: no backend (TestKoorAPI)
			continue
		}
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
//
// Auth's ext_authz takes one routes.APIPrefix off first, as the gateways do: Envoy rewrites the
// path of an /api route only after ext_authz has seen it.
func isAuthPublicPath(p string) bool {
	p, _ = routes.TrimAPIPrefix(p)
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
		{"rule inside a filter's typed_config", "stat_prefix: gateway\n", "stat_prefix: \"\"\n", "StatPrefix"},
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

// TestGatewayLimits: every Envoy config bounds its clients as the Go gateway does (the
// numbers of services/gateway/routes): connections, idle connections, slow headers, buffers,
// unary request bodies, and it drops the identity headers a client may forge.
func TestGatewayLimits(t *testing.T) {
	for _, f := range envoyFiles {
		t.Run(f, func(t *testing.T) { checkGatewayLimits(t, f) })
	}
}

func checkGatewayLimits(t *testing.T, file string) {
	b, err := ParseEnvoy(readRepoFile(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(b, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	l, err := g.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxConnections != routes.MaxConns {
		t.Errorf("the listener holds %d connections at most (connection_limit), want %d", l.MaxConnections, routes.MaxConns)
	}
	if n, ok, err := MaxDownstreamConnections(b); err != nil || !ok || n != routes.MaxConns {
		t.Errorf("overload manager: %d downstream connections at most (set %v, %v), want %d", n, ok, err, routes.MaxConns)
	}
	if l.IdleTimeout != routes.IdleTimeout || l.RequestHeadersTimeout != routes.RequestHeadersTimeout {
		t.Errorf("idle_timeout %v, request_headers_timeout %v; want %v, %v", l.IdleTimeout, l.RequestHeadersTimeout, routes.IdleTimeout, routes.RequestHeadersTimeout)
	}
	if l.MaxRequestHeadersKB != routes.MaxRequestHeaderBytes>>10 {
		t.Errorf("max_request_headers_kb %d, want %d", l.MaxRequestHeadersKB, routes.MaxRequestHeaderBytes>>10)
	}
	// Envoy's edge guidance; its defaults (1 MiB buffers, 256 MiB windows) let a client that
	// does not read make it hold far more.
	if l.BufferBytes != 32<<10 || l.StreamWindowBytes != 64<<10 || l.ConnectionWindowBytes != 1<<20 {
		t.Errorf("per-connection buffer %d, HTTP/2 windows %d/%d; want 32 KiB, 64 KiB/1 MiB", l.BufferBytes, l.StreamWindowBytes, l.ConnectionWindowBytes)
	}
	for _, h := range []string{"plinth-account-id", "plinth-account-name", "plinth-account-role", "plinth-token-expires"} {
		if !slices.Contains(l.RemovedHeaders, h) {
			t.Errorf("a client's %s reaches the backends: not removed by early_header_mutation (%v)", h, l.RemovedHeaders)
		}
	}

	// Every route: a unary one bounds the body to its backend's message limit plus the gRPC
	// prefix; a streaming one (no timeouts) leaves each message to the backend.
	unary, streaming := 0, 0
	for _, rt := range virtualHost(g.hcm.GetRouteConfig(), "*").GetRoutes() {
		if rt.GetDirectResponse() != nil { // no backend, no body read
			continue
		}
		spec := rt.GetMatch().GetPath() + rt.GetMatch().GetPrefix()
		n, limited, err := g.MaxRequestBytes(spec)
		if err != nil {
			t.Fatal(err)
		}
		isStream := rt.GetRoute().GetIdleTimeout() != nil && rt.GetRoute().GetIdleTimeout().AsDuration() == 0
		want := uint64(routes.MaxRequestBytes(rt.GetRoute().GetCluster()) + 5)
		switch {
		case isStream && limited:
			t.Errorf("streaming route %s: its body is cut at %d bytes", spec, n)
		case !isStream && (!limited || n != want):
			t.Errorf("unary route %s: body limited %v to %d bytes, want %d", spec, limited, n, want)
		case isStream:
			streaming++
		default:
			unary++
		}
	}
	if unary == 0 || streaming == 0 {
		t.Errorf("%d unary and %d streaming routes checked", unary, streaming)
	}
	for path, want := range map[string]bool{
		"/services.auth.AuthService/Login":                          true,
		"/stats.StatsService/GetStats":                              true,
		"/proto.VGService/Watch":                                    false,
		"/hashicorp.vagrant.Vagrant/RunnerJobStream":                false,
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": false,
	} {
		if _, limited, err := g.MaxRequestBytes(path); err != nil || limited != want {
			t.Errorf("%s: body limited %v (%v), want %v", path, limited, err, want)
		}
	}
}

// TestKoorAPI: Koor data-control-center's UI's surface under /api: its plain endpoints answered
// by Envoy with upstream's bodies and headers, its RPCs routed as without the prefix, and
// nothing else under /api.
func TestKoorAPI(t *testing.T) {
	for _, f := range envoyFiles {
		t.Run(f, func(t *testing.T) { checkKoorAPI(t, f) })
	}
}

func checkKoorAPI(t *testing.T, file string) {
	g := gatewayOf(t, file)
	for _, tc := range []struct {
		method, path, body, contentType, clear string
	}{
		{"POST", "/api/config", `{"version":"plinth","login":{"providers":[]}}`, "application/json; charset=utf-8", ""},
		{"GET", "/api/ping", `{"message":"Pong"}`, "application/json; charset=utf-8", ""},
		{"GET", "/readiness", "OK", "text/plain; charset=utf-8", ""},
		{"GET", "/api/clear-site-data", "Your local site data should be cleared now, please go back to the data-control-center homepage yourself.",
			"text/plain; charset=utf-8", `"cache", "cookies", "storage"`},
	} {
		a, ok, err := g.Direct(tc.method, tc.path)
		if err != nil || !ok || a.Status != 200 || a.Body != tc.body || a.Authorized ||
			a.Headers["content-type"] != tc.contentType || a.Headers["clear-site-data"] != tc.clear {
			t.Errorf("%s %s: %+v (%v, %v); want 200 %q, %s, Clear-Site-Data %q, no token", tc.method, tc.path, a, ok, err, tc.body, tc.contentType, tc.clear)
		}
		other := "GET"
		if tc.method == "GET" {
			other = "POST"
		}
		if rt, ok, err := g.MatchRequest(other, tc.path); ok || err != nil {
			t.Errorf("%s %s is answered: %v (%v)", other, tc.path, rt, err)
		}
	}
	for _, tc := range []struct {
		path, upstream string
		want           GatewayRoute
	}{
		{"/api/services.auth.AuthService/Login", "/services.auth.AuthService/Login", GatewayRoute{"auth", false}},
		{"/api/services.auth.AuthService/Logout", "/services.auth.AuthService/Logout", GatewayRoute{"auth", true}},
		{"/api/services.auth.AuthService/LoginAs", "/services.auth.AuthService/LoginAs", GatewayRoute{"auth", true}},
		{"/api/stats.StatsService/GetClusterStats", "/stats.StatsService/GetClusterStats", GatewayRoute{"stats", true}},
		{"/api/grpc.health.v1.Health/Watch", "/grpc.health.v1.Health/Watch", GatewayRoute{"auth", false}},
		{"/api/cnct.kaas.api.Cluster/CreateCluster", "/cnct.kaas.api.Cluster/CreateCluster", GatewayRoute{"kaas", true}},
		{"/api/hashicorp.vagrant.Vagrant/GetVersionInfo", "/hashicorp.vagrant.Vagrant/GetVersionInfo", GatewayRoute{"vagrant-server", false}},
	} {
		got, ok, err := g.Route(tc.path)
		rt, _, _ := g.Match(tc.path)
		up, uerr := UpstreamPath(rt, tc.path)
		if err != nil || !ok || got != tc.want || uerr != nil || up != tc.upstream {
			t.Errorf("%s: %+v → %s (matched %v, %v, %v), want %+v → %s", tc.path, got, up, ok, err, uerr, tc.want, tc.upstream)
		}
	}
	// The prefix once, literally; the plain paths keep their own path.
	for _, p := range []string{"/api/api/stats.StatsService/GetClusterStats", "/apix/stats.StatsService/GetClusterStats",
		"/API/stats.StatsService/GetClusterStats", "/api", "/api/", "/api/unknown", "/api/no.Such/Method", "/api/config/x"} {
		for _, m := range []string{"GET", "POST"} {
			if rt, ok, err := g.MatchRequest(m, p); ok || err != nil {
				t.Errorf("%s %s is routed: %v (%v)", m, p, rt, err)
			}
		}
	}
	rt, _, _ := g.Match("/stats.StatsService/GetClusterStats")
	if up, err := UpstreamPath(rt, "/stats.StatsService/GetClusterStats"); err != nil || up != "/stats.StatsService/GetClusterStats" {
		t.Errorf("the plain path reaches stats as %s (%v)", up, err)
	}
	// /api//x, /api/./x, /api/../x and %2F reach a route only as their normalised form, which
	// ext_authz and routing both see.
	if !g.hcm.GetNormalizePath().GetValue() || !g.hcm.GetMergeSlashes() ||
		g.hcm.GetPathWithEscapedSlashesAction() != hcmv3.HttpConnectionManager_REJECT_REQUEST {
		t.Error("paths are not normalised (normalize_path, merge_slashes, escaped slashes rejected) before routing and ext_authz")
	}
}

func TestUpstreamPath(t *testing.T) {
	for _, tc := range []struct {
		match              *routev3.RouteMatch
		rewrite, path, out string
	}{
		{&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/api/a.B/C"}}, "/a.B/C", "/api/a.B/C", "/a.B/C"},
		{&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api/a.B/"}}, "/a.B/", "/api/a.B/D", "/a.B/D"},
		{&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/a.B/"}}, "", "/a.B/D", "/a.B/D"},
	} {
		rt := &routev3.Route{Match: tc.match, Action: &routev3.Route_Route{Route: &routev3.RouteAction{PrefixRewrite: tc.rewrite}}}
		if got, err := UpstreamPath(rt, tc.path); err != nil || got != tc.out {
			t.Errorf("%v rewrite %q of %s: %s (%v), want %s", tc.match, tc.rewrite, tc.path, got, err, tc.out)
		}
	}
}

// gatewayOf parses the repository's file and finds its gateway listener.
func gatewayOf(t *testing.T, file string) *Gateway {
	t.Helper()
	b, err := ParseEnvoy(readRepoFile(t, file))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGateway(b, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	return g
}
