// Package catalog is what the gateway knows of the suite's APIs: the descriptors compiled into
// libs/api of every routed service, which methods stream, and the service list reflection
// answers with. The descriptors are the ones the backends were built from, so `grpcurl
// describe` through the gateway shows exactly what the backends serve.
package catalog

import (
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Catalog holds the descriptors of every routed service.
type Catalog struct {
	services map[string]protoreflect.ServiceDescriptor
	shapes   map[string]Shape // by full method "/pkg.Svc/M"
}

// Shape says which sides of a method stream.
type Shape struct {
	ClientStreams, ServerStreams bool
}

// Load resolves every service of the route table in the global registry. A route naming a
// service that is not compiled in is an error: the gateway would route calls it cannot describe.
func Load() (*Catalog, error) {
	c := &Catalog{services: map[string]protoreflect.ServiceDescriptor{}, shapes: map[string]Shape{}}
	for _, r := range routes.Table {
		if _, done := c.services[r.Service]; done {
			continue
		}
		sd, err := routes.ServiceDescriptor(r.Service)
		if err != nil {
			return nil, fmt.Errorf("catalog: route %s: %w", r.Path(), err)
		}
		c.services[r.Service] = sd
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			c.shapes["/"+r.Service+"/"+string(m.Name())] = Shape{ClientStreams: m.IsStreamingClient(), ServerStreams: m.IsStreamingServer()}
		}
	}
	return c, nil
}

// Services lists the routed services' full names, sorted.
func (c *Catalog) Services() []string {
	names := make([]string, 0, len(c.services))
	for n := range c.services {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Shape returns which sides of a routed method stream; ok is false for a method the
// catalog does not know.
func (c *Catalog) Shape(fullMethod string) (s Shape, ok bool) {
	s, ok = c.shapes[fullMethod]
	return s, ok
}

// ServiceInfo lists the routed services plus the gateway's own (health, reflection) for
// server reflection, which needs only the names; their methods come from the descriptors.
func (c *Catalog) ServiceInfo(own map[string]grpc.ServiceInfo) map[string]grpc.ServiceInfo {
	out := make(map[string]grpc.ServiceInfo, len(c.services)+len(own))
	for n, info := range own {
		out[n] = info
	}
	for n, sd := range c.services {
		info := grpc.ServiceInfo{Metadata: string(sd.ParentFile().Path())}
		for i := range sd.Methods().Len() {
			m := sd.Methods().Get(i)
			info.Methods = append(info.Methods, grpc.MethodInfo{
				Name: string(m.Name()), IsClientStream: m.IsStreamingClient(), IsServerStream: m.IsStreamingServer(),
			})
		}
		out[n] = info
	}
	return out
}

// ServiceInfoFunc adapts a function to reflection's ServiceInfoProvider.
type ServiceInfoFunc func() map[string]grpc.ServiceInfo

// GetServiceInfo implements reflection.ServiceInfoProvider.
func (f ServiceInfoFunc) GetServiceInfo() map[string]grpc.ServiceInfo { return f() }
