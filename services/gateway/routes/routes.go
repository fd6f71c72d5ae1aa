// Package routes is the gateway's one route table: for every gRPC service of every API in
// the suite, which backend serves it and whether a call needs a Plinth bearer token. The Go
// gateway that `make up` starts reads it, and the Envoy configurations (docker-compose,
// Kubernetes) are generated from it, so the two gateways cannot disagree.
package routes

import (
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// Access says who may call a route through the gateway.
type Access int

const (
	// Token: the call carries `authorization: Bearer <token>` that auth accepts (the gateway
	// asks auth, as Envoy's ext_authz does); anything else is refused with Unauthenticated.
	Token Access = iota
	// Public: no token needed (auth's own Login and CheckToken, health, reflection).
	Public
	// Own: the backend checks its own credentials, which are not Plinth tokens (Vagrant's
	// clients carry vagrant-server's own tokens); the gateway passes the call through.
	Own
)

func (a Access) String() string {
	switch a {
	case Token:
		return "token"
	case Public:
		return "public"
	case Own:
		return "own"
	}
	return "unknown"
}

// Backends of the suite, named as the launcher, docker-compose and Kubernetes name them.
const (
	Auth          = "auth"
	Stats         = "stats"
	Kaas          = "kaas"
	VagrantServer = "vagrant-server"
	LvmdAgent     = "lvmd-agent"
	CNPGIPlugin   = "cnpgi-plugin"
)

// Backends lists every backend a route names, in the suite's port order.
func Backends() []string {
	return []string{Auth, Stats, Kaas, VagrantServer, LvmdAgent, CNPGIPlugin}
}

// Route sends the calls of one gRPC service (or one method of it) to a backend.
type Route struct {
	// Service is the full gRPC service name, e.g. "services.auth.AuthService".
	Service string
	// Method, when set, narrows the route to one method (an exception to the service's
	// route, e.g. auth's public Login).
	Method  string
	Backend string
	Access  Access
}

// Path is the HTTP/2 path the route matches: "/pkg.Service/Method" for a method route,
// "/pkg.Service/" (a prefix) for a service route.
func (r Route) Path() string {
	return "/" + r.Service + "/" + r.Method
}

// Table is every route of the suite. Method routes come first, so a first-match reader (and
// Envoy, whose routes are ordered) sees an exception before its service's route.
var Table = []Route{
	// auth's public paths, exactly those of PLINTH_AUTH_PUBLIC_PATHS (services/auth/README.md).
	{Service: "services.auth.AuthService", Method: "Login", Backend: Auth, Access: Public},
	{Service: "services.auth.AuthService", Method: "CheckToken", Backend: Auth, Access: Public},
	{Service: "services.auth.AuthService", Backend: Auth, Access: Token},
	// The same service on the wire of Koor's released UIs (v0.1.0-alpha to v0.6.0).
	{Service: "api.services.auth.v1.AuthService", Method: "Login", Backend: Auth, Access: Public},
	{Service: "api.services.auth.v1.AuthService", Method: "CheckToken", Backend: Auth, Access: Public},
	{Service: "api.services.auth.v1.AuthService", Backend: Auth, Access: Token},
	// OpenID Connect sign-in begins a session, as Login does: public. Browsers use the
	// gateway's /auth/oidc/ and /api/oauth2/ routes (internal/signin), which call these.
	{Service: "plinth.auth.v1.OIDCService", Method: "ListProviders", Backend: Auth, Access: Public},
	{Service: "plinth.auth.v1.OIDCService", Method: "BeginSignIn", Backend: Auth, Access: Public},
	{Service: "plinth.auth.v1.OIDCService", Method: "CompleteSignIn", Backend: Auth, Access: Public},
	// Plinth's user administration; auth itself refuses callers who are not admins.
	{Service: "plinth.auth.v1.AdminService", Backend: Auth, Access: Token},

	// stats: Koor's dashboard API.
	{Service: "stats.StatsService", Backend: Stats, Access: Token},
	// stats: the same API on the wire of Koor's released UIs (v0.1.0-alpha to v0.6.0).
	{Service: "api.services.stats.v1.StatsService", Backend: Stats, Access: Token},
	// stats' own read API: the usage history (the console's capacity plot).
	{Service: "plinth.stats.v1.HistoryService", Backend: Stats, Access: Token},
	// stats' own read API: the health checks, pools, OSDs and crashes (the console's Storage page).
	{Service: "plinth.stats.v1.ClusterService", Backend: Stats, Access: Token},

	// kaas: CNCT's KaaS API.
	{Service: "cnct.kaas.api.Cluster", Backend: Kaas, Access: Token},
	// kaas: Plinth's read-only view of its clusters (catalog, causes, timeline).
	{Service: "plinth.kaas.v1.ClusterInfoService", Backend: Kaas, Access: Token},

	// vagrant-server: Vagrant clients and runners carry the server's own tokens.
	{Service: "hashicorp.vagrant.Vagrant", Backend: VagrantServer, Access: Own},
	// vagrant-server's own read view of its runners takes Plinth tokens (the server checks
	// them with auth too).
	{Service: "plinth.vagrant.v1.RunnerService", Backend: VagrantServer, Access: Token},
	// vagrant-server's Vagrant tokens for Plinth sessions: the console's way onto the Vagrant
	// API without a second sign-in (the server checks the Plinth token with auth too).
	{Service: "plinth.vagrant.v1.SessionTokenService", Backend: VagrantServer, Access: Token},

	// lvmd-agent: TopoLVM's lvmd API (the node driver talks to the agent directly; through the
	// gateway it is the console's and an operator's view).
	{Service: "proto.LVService", Backend: LvmdAgent, Access: Token},
	{Service: "proto.VGService", Backend: LvmdAgent, Access: Token},
	// lvmd-agent's own read-only jobs view (the console's Volumes page: backups and restores).
	{Service: "plinth.lvmd.v1.JobService", Backend: LvmdAgent, Access: Token},
	{Service: "plinth.lvmd.v1.VolumeService", Backend: LvmdAgent, Access: Token},

	// cnpgi-plugin: CloudNativePG's plugin API (the operator talks to the plugin directly
	// over mTLS; through the gateway it is an operator's view).
	{Service: "cnpgi.identity.v1.Identity", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.operator.v1.Operator", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.operator_lifecycle.v1.OperatorLifecycle", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.wal.v1.WAL", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.backup.v1.Backup", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.metrics.v1.Metrics", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.reconciler.v1.ReconcilerHooks", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.wal.v1.RestoreJobHooks", Backend: CNPGIPlugin, Access: Token},
	{Service: "cnpgi.identity.v1.Postgres", Backend: CNPGIPlugin, Access: Token},
	// cnpgi-plugin's own read-only catalog view (the console's Backups page).
	{Service: "plinth.cnpgi.v1.CatalogService", Backend: CNPGIPlugin, Access: Token},
}

// Gateway-level services every backend serves: the gateway answers them itself (health of
// the gateway, reflection over the whole suite), or in Envoy sends them to auth. Public.
var GatewayServices = []string{
	"grpc.health.v1.Health",
	"grpc.reflection.v1.ServerReflection",
	"grpc.reflection.v1alpha.ServerReflection",
}

// Lookup finds the route of a full method path ("/pkg.Service/Method"): the method's own
// route if there is one, else its service's. ok is false for a path no route serves.
func Lookup(fullMethod string) (r Route, ok bool) {
	service, method, found := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !found || !strings.HasPrefix(fullMethod, "/") || method == "" || strings.Contains(method, "/") {
		return Route{}, false
	}
	i := slices.IndexFunc(Table, func(r Route) bool { return r.Service == service && r.Method == method })
	if i < 0 {
		i = slices.IndexFunc(Table, func(r Route) bool { return r.Service == service && r.Method == "" })
	}
	if i < 0 {
		return Route{}, false
	}
	return Table[i], true
}

// CORS lists, for both gateways: the request headers a browser page of an allowed origin may
// send (gRPC-Web's and Connect's, the bearer token, trace context, and Vagrant's
// client-api-protocol, which every Vagrant call carries) and the response headers it may read
// (the status, its details, and retry-after of a refused login).
var (
	CORSAllowHeaders = []string{
		"authorization", "content-type", "x-grpc-web", "x-user-agent", "connect-protocol-version",
		"connect-timeout-ms", "grpc-timeout", "traceparent", "tracestate", "client-api-protocol",
	}
	CORSExposeHeaders = []string{"grpc-status", "grpc-message", "grpc-status-details-bin", "retry-after"}
)

// DefaultUnaryTimeout bounds a unary call through either gateway (streams have none). kaas and
// vagrant calls that talk to providers need more than Envoy's own 15 s default.
const DefaultUnaryTimeout = 60 * time.Second

// unaryTimeouts are the backends whose unary calls legitimately take longer: cnpgi-plugin's
// WAL archive and restore may take up to PLINTH_CNPGI_WAL_TIMEOUT (10m) each.
var unaryTimeouts = map[string]time.Duration{CNPGIPlugin: 15 * time.Minute}

// UnaryTimeout is the deadline both gateways give a unary call to backend.
func UnaryTimeout(backend string) time.Duration {
	if d, ok := unaryTimeouts[backend]; ok {
		return d
	}
	return DefaultUnaryTimeout
}

// DefaultMaxRequestBytes is the largest request message a backend accepts: grpc-go's default
// receive limit, which every backend of the suite keeps (none sets grpc.MaxRecvMsgSize,
// cnpgi-plugin included). The gateway refuses a larger one before reading it, so it never
// buffers what the backend would refuse anyway.
const DefaultMaxRequestBytes = 4 << 20

// maxRequestBytes are the backends that accept larger request messages (none today).
var maxRequestBytes = map[string]int{}

// MaxRequestBytes is the largest request message the gateway relays to backend.
func MaxRequestBytes(backend string) int {
	if n, ok := maxRequestBytes[backend]; ok {
		return n
	}
	return DefaultMaxRequestBytes
}

// LargestRequestBytes is the largest MaxRequestBytes of any backend.
func LargestRequestBytes() int {
	n := DefaultMaxRequestBytes
	for _, b := range Backends() {
		n = max(n, MaxRequestBytes(b))
	}
	return n
}

// BackendEnv is the gateway's variable for a backend's address, the one the launcher sets:
// PLINTH_GATEWAY_BACKEND_<NAME>, the name upper-cased with dashes as underscores; auth's is
// PLINTH_AUTH_ADDR, the name every binary that checks tokens gives auth's address (one name
// per concept; the gateway's Config refuses the former PLINTH_GATEWAY_BACKEND_AUTH).
func BackendEnv(backend string) string {
	if backend == Auth {
		return "PLINTH_AUTH_ADDR"
	}
	return "PLINTH_GATEWAY_BACKEND_" + strings.ToUpper(strings.ReplaceAll(backend, "-", "_"))
}

// APIPrefix is the path prefix under which both gateways' HTTP port also serves every route
// (authz.APIPrefix: Koor data-control-center's UI's base URL).
const APIPrefix = authz.APIPrefix

// TrimAPIPrefix returns the call path p names under APIPrefix, and whether p was under it
// (authz.TrimAPIPrefix).
func TrimAPIPrefix(p string) (string, bool) { return authz.TrimAPIPrefix(p) }
