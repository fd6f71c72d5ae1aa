package configcheck

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// CheckPlinthService checks a Plinth service container against the runtime conventions:
// gRPC and admin servers listen on all interfaces (127.0.0.1 would be unreachable from other
// containers) and the gRPC port is published; Postgres and NATS URLs name services of the file
// that this one waits for until healthy; a health check asks the admin /readyz.
func CheckPlinthService(p *types.Project, s types.ServiceConfig) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("service %s: %s", s.Name, fmt.Sprintf(format, args...)))
	}
	env := func(k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		fail("%s is not set", k)
		return ""
	}
	grpcPort, err := containerPort(env("PLINTH_GRPC_ADDR"))
	if err != nil {
		fail("PLINTH_GRPC_ADDR: %v", err)
	} else if owner := NetnsOwner(p, s); grpcPort > 0 && !publishes(owner, grpcPort) {
		if owner.Name != s.Name {
			fail("the gRPC port %d is not published by %s, whose network namespace it shares", grpcPort, owner.Name)
		} else {
			fail("the gRPC port %d is not published", grpcPort)
		}
	}
	adminPort, err := containerPort(env("PLINTH_ADMIN_ADDR"))
	if err != nil {
		fail("PLINTH_ADMIN_ADDR: %v", err)
	}
	for _, k := range []string{"PLINTH_DATABASE_URL", "PLINTH_NATS_URL"} {
		v := env(k)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			fail("%s: %v", k, err)
			continue
		}
		dep := u.Hostname()
		if _, ok := p.Services[dep]; !ok {
			fail("%s names host %q, which is not a service of this file", k, dep)
		} else if d, ok := s.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
			fail("%s is on %s, but the service does not wait for %s to be healthy (depends_on)", k, dep, dep)
		}
	}
	if hc := s.HealthCheck; hc != nil && adminPort > 0 {
		want := fmt.Sprintf("127.0.0.1:%d/readyz", adminPort)
		if !slices.ContainsFunc(hc.Test, func(a string) bool { return strings.Contains(a, want) }) {
			fail("the health check %q does not ask %s", hc.Test, want)
		}
	}
	return errs
}

// NetnsOwner is the service whose container holds s's network namespace, and so publishes
// its ports: s itself, or the service its network_mode "service:<name>" names.
func NetnsOwner(p *types.Project, s types.ServiceConfig) types.ServiceConfig {
	if owner, ok := strings.CutPrefix(s.NetworkMode, "service:"); ok {
		if o, ok := p.Services[owner]; ok {
			return o
		}
	}
	return s
}

// containerPort is the TCP port of a listen address that other containers can reach; 0 for a
// unix socket or "off".
func containerPort(addr string) (int, error) {
	if addr == "" || addr == "off" || strings.HasPrefix(addr, "unix://") {
		return 0, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	if host != "0.0.0.0" && host != "" && host != "::" {
		return 0, fmt.Errorf("%s listens only on %s: use 0.0.0.0 in a container", addr, host)
	}
	return strconv.Atoi(port)
}

func publishes(s types.ServiceConfig, port int) bool {
	return slices.ContainsFunc(s.Ports, func(pc types.ServicePortConfig) bool { return int(pc.Target) == port })
}
