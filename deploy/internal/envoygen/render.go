package envoygen

import (
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	// The gRPC services the table routes: their descriptors say which methods stream.
	_ "google.golang.org/grpc/health/grpc_health_v1"
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1"
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

//go:generate go run ../../cmd/deploygen -root ../../..

// RegenerateCommand is what the header of every generated file tells a reader to run.
const RegenerateCommand = "make generate-deploy"

//go:embed envoy.yaml.tmpl
var tmplText string

var tmpl = template.Must(template.New("envoy.yaml").Funcs(template.FuncMap{"quote": strconv.Quote}).Parse(tmplText))

// Cluster is one backend as the template writes it.
type Cluster struct {
	Name string
	Address
}

type view struct {
	Env     Environment
	Command string
	// AllowHeaders and ExposeHeaders are the CORS lists both gateways share.
	AllowHeaders, ExposeHeaders string
	// IdentityHeaders are dropped from every request before routing.
	IdentityHeaders []string
	// MaxRequestBytes bounds the body of a unary call (body_size_limit).
	MaxRequestBytes int
	// IdleTimeout and RequestHeadersTimeout are durations as protobuf JSON writes them.
	IdleTimeout, RequestHeadersTimeout string
	MaxRequestHeadersKB                int
	MaxConns                           int
	// AuthGatewayPort is auth's gateway listener, named in a comment.
	AuthGatewayPort int
	Routes          []viewRoute
	Endpoints       []Endpoint
	Clusters        []Cluster
}

// IdentityHeaders name the caller to a backend (libs/platform/authn's AccountHeader,
// NameHeader and RoleHeader; ExpiresHeader, which only auth's CheckToken answers): only
// ext_authz may set them, from the verified token, so the gateway drops any copy a client
// sent before routing.
var IdentityHeaders = []string{"plinth-account-id", "plinth-account-name", "plinth-account-role", "plinth-token-expires"}

// grpcPrefixBytes is what gRPC framing adds to a message: a flag byte and a 4-byte length.
const grpcPrefixBytes = 5

// unaryBodyLimit is the largest body of a unary call on any route of rs: its backend's
// message limit plus the gRPC prefix. Envoy's body_size_limit filter takes one limit per
// filter chain, so every unary route's backend must have the same (routes.MaxRequestBytes);
// one that differs is an error until the generator gives it a filter chain of its own.
func unaryBodyLimit(rs []Route) (int, error) {
	limit := routes.DefaultMaxRequestBytes
	for _, r := range rs {
		if n := routes.MaxRequestBytes(r.Backend); !r.Streaming && n != limit {
			return 0, fmt.Errorf("route %s: backend %s takes %d-byte messages, the other routes %d: the body_size_limit filter has one limit", r.Path, r.Backend, n, limit)
		}
	}
	return limit + grpcPrefixBytes, nil
}

// seconds writes d as protobuf JSON writes a Duration of whole seconds: "120s".
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

type viewRoute struct {
	Route
	Timeout string
}

// Render writes the Envoy bootstrap of env for the route table and gateway-level services.
func Render(env Environment, table []routes.Route, gatewayServices []string) ([]byte, error) {
	rs, err := Plan(table, gatewayServices)
	if err != nil {
		return nil, err
	}
	backends := Backends(rs)
	if err := env.check(backends); err != nil {
		return nil, err
	}
	bodyLimit, err := unaryBodyLimit(rs)
	if err != nil {
		return nil, err
	}
	v := view{Env: env, Command: RegenerateCommand,
		AllowHeaders:    strings.Join(routes.CORSAllowHeaders, ", "),
		ExposeHeaders:   strings.Join(routes.CORSExposeHeaders, ", "),
		IdentityHeaders: IdentityHeaders, MaxRequestBytes: bodyLimit,
		IdleTimeout: seconds(routes.IdleTimeout), RequestHeadersTimeout: seconds(routes.RequestHeadersTimeout),
		MaxRequestHeadersKB: routes.MaxRequestHeaderBytes >> 10, MaxConns: routes.MaxConns,
		Endpoints: KoorEndpoints(), AuthGatewayPort: AuthGatewayPort}
	for _, r := range rs {
		t := "0s"
		if !r.Streaming {
			t = seconds(routes.UnaryTimeout(r.Backend))
		}
		v.Routes = append(v.Routes, viewRoute{Route: r, Timeout: t})
	}
	for _, b := range backends {
		v.Clusters = append(v.Clusters, Cluster{Name: b, Address: env.Backends[b]})
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render %s: %w", env.File, err)
	}
	return buf.Bytes(), nil
}

// RenderAll renders every environment from the suite's route table, keyed by output file.
func RenderAll() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, env := range Environments() {
		b, err := Render(env, routes.Table, routes.GatewayServices)
		if err != nil {
			return nil, err
		}
		out[env.File] = b
	}
	return out, nil
}
