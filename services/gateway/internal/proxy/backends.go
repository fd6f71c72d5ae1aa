package proxy

import (
	"fmt"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Backends are the client connections to the suite's services, by the route table's backend
// names. A backend without a connection is one this gateway was not told about.
type Backends struct {
	conns map[string]grpc.ClientConnInterface
	// envOf names the setting that configures a backend, for the error a caller sees.
	envOf func(backend string) string
}

// NewBackends returns the backends in conns; envOf (optional) names the setting of a backend.
func NewBackends(conns map[string]grpc.ClientConnInterface, envOf func(string) string) *Backends {
	if envOf == nil {
		envOf = func(string) string { return "" }
	}
	return &Backends{conns: conns, envOf: envOf}
}

// Conn returns the connection of a backend, or Unavailable naming it when it is not
// configured: a retry may succeed once an operator configures it, and the client learns
// which service is missing rather than a bare transport error.
func (b *Backends) Conn(backend string) (grpc.ClientConnInterface, error) {
	if c, ok := b.conns[backend]; ok && c != nil {
		return c, nil
	}
	msg := fmt.Sprintf("backend %s is not configured on this gateway", backend)
	if env := b.envOf(backend); env != "" {
		msg += " (" + env + ")"
	}
	return nil, status.Error(codes.Unavailable, msg)
}

// Names lists the configured backends, sorted.
func (b *Backends) Names() []string {
	var names []string
	for n, c := range b.conns {
		if c != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
