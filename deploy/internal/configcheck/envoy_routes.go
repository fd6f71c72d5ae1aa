package configcheck

import (
	"errors"
	"fmt"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// GatewayRoute is what the gateway does with one request path.
type GatewayRoute struct {
	// Cluster receives the request.
	Cluster string
	// Authorized says ext_authz checks the request (its token) before it is routed.
	Authorized bool
}

// Gateway answers routing questions about the HTTP connection manager of a listener, applying
// Envoy's rules: the first matching route wins, and a per-filter config on the route overrides
// the virtual host's, which overrides the route configuration's.
type Gateway struct {
	hcm *hcmv3.HttpConnectionManager
	// authzFilter is the name of the ext_authz HTTP filter ("" when there is none).
	authzFilter string
}

// NewGateway finds the HTTP connection manager of the named listener. Only an inline
// route_config is supported (no RDS), which is what a static bootstrap has.
func NewGateway(b *bootstrapv3.Bootstrap, listener string) (*Gateway, error) {
	for _, l := range b.GetStaticResources().GetListeners() {
		if l.GetName() != listener {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				hcm := &hcmv3.HttpConnectionManager{}
				if f.GetTypedConfig().MessageIs(hcm) {
					if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
						return nil, fmt.Errorf("listener %s: %w", listener, err)
					}
					return newGateway(hcm)
				}
			}
		}
		return nil, fmt.Errorf("listener %s has no http_connection_manager", listener)
	}
	return nil, fmt.Errorf("no listener named %s", listener)
}

func newGateway(hcm *hcmv3.HttpConnectionManager) (*Gateway, error) {
	if hcm.GetRouteConfig() == nil {
		return nil, errors.New("the http_connection_manager has no inline route_config")
	}
	g := &Gateway{hcm: hcm}
	for _, f := range hcm.GetHttpFilters() {
		if f.GetTypedConfig().MessageIs(&extauthzv3.ExtAuthz{}) && !f.GetDisabled() {
			g.authzFilter = f.GetName()
		}
	}
	return g, nil
}

// ExtAuthz returns the configuration of the gateway's ext_authz filter, or nil without one.
func (g *Gateway) ExtAuthz() (*extauthzv3.ExtAuthz, error) {
	for _, f := range g.hcm.GetHttpFilters() {
		if f.GetName() == g.authzFilter && g.authzFilter != "" {
			c := &extauthzv3.ExtAuthz{}
			return c, f.GetTypedConfig().UnmarshalTo(c)
		}
	}
	return nil, nil
}

// Route returns what happens to a request for path to any host; ok is false when no route
// matches (Envoy answers 404). Routes with matchers other than path and prefix are an error,
// not a guess.
func (g *Gateway) Route(path string) (r GatewayRoute, ok bool, err error) {
	rt, ok, err := g.Match(path)
	if !ok || err != nil {
		return GatewayRoute{}, false, err
	}
	authorized, err := g.authorized(g.hcm.GetRouteConfig(), virtualHost(g.hcm.GetRouteConfig(), "*"), rt)
	return GatewayRoute{Cluster: rt.GetRoute().GetCluster(), Authorized: authorized}, true, err
}

// Match returns the route Envoy picks for a request for path to any host (the first match),
// with its timeouts and per-filter configs; ok is false when none matches.
func (g *Gateway) Match(path string) (rt *routev3.Route, ok bool, err error) {
	vh := virtualHost(g.hcm.GetRouteConfig(), "*")
	if vh == nil {
		return nil, false, errors.New("no virtual host for any domain (\"*\")")
	}
	for i, rt := range vh.GetRoutes() {
		m := rt.GetMatch()
		if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil || m.GetRuntimeFraction() != nil {
			return nil, false, fmt.Errorf("route %d: only path and prefix matches are supported", i)
		}
		var hit bool
		switch p := m.GetPathSpecifier().(type) {
		case *routev3.RouteMatch_Prefix:
			hit = strings.HasPrefix(path, p.Prefix)
		case *routev3.RouteMatch_Path:
			hit = path == p.Path
		default:
			return nil, false, fmt.Errorf("route %d: only path and prefix matches are supported", i)
		}
		if hit {
			return rt, true, nil
		}
	}
	return nil, false, nil
}

func (g *Gateway) authorized(rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, rt *routev3.Route) (bool, error) {
	if g.authzFilter == "" {
		return false, nil
	}
	// The most specific level that configures the filter decides.
	for _, cfgs := range []map[string]*anypb.Any{rt.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), rc.GetTypedPerFilterConfig()} {
		a, ok := cfgs[g.authzFilter]
		if !ok {
			continue
		}
		per := &extauthzv3.ExtAuthzPerRoute{}
		if err := a.UnmarshalTo(per); err != nil {
			return false, fmt.Errorf("per-route config of %s is a %s, not ExtAuthzPerRoute", g.authzFilter, a.MessageName())
		}
		return !per.GetDisabled(), nil
	}
	return true, nil
}

// virtualHost is the virtual host listing domain exactly (Envoy's wildcard rules are not
// needed for one "*" host).
func virtualHost(rc *routev3.RouteConfiguration, domain string) *routev3.VirtualHost {
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			if d == domain {
				return vh
			}
		}
	}
	return nil
}
