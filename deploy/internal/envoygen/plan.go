// Package envoygen renders the Envoy gateway configuration (a static v3 bootstrap for Envoy
// v1.40) from the one route table, services/gateway/routes, for each environment the suite is
// deployed to: docker-compose and Kubernetes differ only in where the backends are and how
// Envoy reaches them.
package envoygen

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Route is one Envoy route, in the order Envoy must try it.
type Route struct {
	// Path is the match: an exact "/pkg.Service/Method", or a prefix "/pkg.Service/" when
	// Prefix is set.
	Path   string
	Prefix bool
	// Backend is the cluster (a routes backend name).
	Backend string
	// Public routes skip ext_authz: no Plinth token is needed (routes.Public), or the backend
	// checks its own credentials (routes.Own).
	Public bool
	// Access is the route table's word for it, kept for the generated comment.
	Access routes.Access
	// Streaming routes carry server-, client- or bidirectional streams: no route timeout and
	// no idle cut, a stream may be quiet for hours (job logs, runner streams, Watch).
	Streaming bool
	// Rewrite, when set, is what Envoy rewrites the matched path (or prefix) to before the
	// backend sees it: the routes.APIPrefix twin of a route names the route's own path.
	Rewrite string
}

// Plan turns the route table and the gateway-level services into Envoy routes:
//   - the table's method routes first (an exception before its service's route), then for
//     each service route its streaming methods as exact routes (no timeout) followed by the
//     service prefix (unary timeout); a service whose every method streams is one prefix
//     route without a timeout;
//   - gateway-level services (health, reflection) go to auth, public, the same way;
//   - then each of those routes again under routes.APIPrefix (Koor's UI calls
//     "/api/stats.StatsService/GetClusterStats"), in the same order and with the same
//     settings, its path rewritten to the route's own before it reaches the backend.
//
// Every service must be linked into the route table (routes.ServiceDescriptor): a route to a service that does not exist is an error, not a
// silently dead route.
func Plan(table []routes.Route, gatewayServices []string) ([]Route, error) {
	var out []Route
	exact := map[string]bool{}
	for _, r := range table {
		if r.Method == "" {
			continue
		}
		sd, err := routes.ServiceDescriptor(r.Service)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Path(), err)
		}
		md := sd.Methods().ByName(protoreflect.Name(r.Method))
		if md == nil {
			return nil, fmt.Errorf("route %s: service %s has no method %s", r.Path(), r.Service, r.Method)
		}
		out = append(out, Route{Path: r.Path(), Backend: r.Backend, Access: r.Access, Public: r.Access != routes.Token, Streaming: streams(md)})
		exact[r.Path()] = true
	}
	add := func(name, backend string, access routes.Access) error {
		sd, err := routes.ServiceDescriptor(name)
		if err != nil {
			return fmt.Errorf("route to %s: %w", name, err)
		}
		prefix := "/" + name + "/"
		var streaming []Route
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			if p := prefix + string(md.Name()); streams(md) && !exact[p] {
				streaming = append(streaming, Route{Path: p, Backend: backend, Access: access, Public: access != routes.Token, Streaming: true})
			}
		}
		if len(streaming) > 0 && len(streaming) == sd.Methods().Len() {
			out = append(out, Route{Path: prefix, Prefix: true, Backend: backend, Access: access, Public: access != routes.Token, Streaming: true})
			return nil
		}
		out = append(out, streaming...)
		out = append(out, Route{Path: prefix, Prefix: true, Backend: backend, Access: access, Public: access != routes.Token})
		return nil
	}
	for _, name := range gatewayServices {
		if err := add(name, routes.Auth, routes.Public); err != nil {
			return nil, err
		}
	}
	for _, r := range table {
		if r.Method != "" {
			continue
		}
		if err := add(r.Service, r.Backend, r.Access); err != nil {
			return nil, err
		}
	}
	for _, r := range slices.Clone(out) {
		r.Rewrite = r.Path
		r.Path = routes.APIPrefix + r.Path
		out = append(out, r)
	}
	seen := map[string]bool{}
	for _, r := range out {
		if seen[r.Path] {
			return nil, fmt.Errorf("route %s appears twice in the table", r.Path)
		}
		seen[r.Path] = true
	}
	return out, nil
}

func streams(md protoreflect.MethodDescriptor) bool {
	return md.IsStreamingClient() || md.IsStreamingServer()
}

// Backends lists the backends the routes use, in routes.Backends order.
func Backends(rs []Route) []string {
	var out []string
	for _, b := range routes.Backends() {
		if slices.ContainsFunc(rs, func(r Route) bool { return r.Backend == b }) {
			out = append(out, b)
		}
	}
	return out
}
