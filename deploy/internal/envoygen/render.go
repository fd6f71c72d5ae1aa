package envoygen

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"text/template"

	// The gRPC services the table routes: their descriptors say which methods stream.
	_ "google.golang.org/grpc/health/grpc_health_v1"
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1"
	_ "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

//go:generate go run ../../cmd/envoygen -root ../../..

// RegenerateCommand is what the header of every generated file tells a reader to run.
const RegenerateCommand = "make generate-envoy"

//go:embed envoy.yaml.tmpl
var tmplText string

var tmpl = template.Must(template.New("envoy.yaml").Parse(tmplText))

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
	Routes                      []viewRoute
	Clusters                    []Cluster
}

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
	v := view{Env: env, Command: RegenerateCommand,
		AllowHeaders:  strings.Join(routes.CORSAllowHeaders, ", "),
		ExposeHeaders: strings.Join(routes.CORSExposeHeaders, ", ")}
	for _, r := range rs {
		t := "0s"
		if !r.Streaming {
			// Durations as protobuf JSON writes them: whole seconds, "900s".
			t = fmt.Sprintf("%ds", int(routes.UnaryTimeout(r.Backend).Seconds()))
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
