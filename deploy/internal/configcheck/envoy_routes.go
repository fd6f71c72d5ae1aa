package configcheck

import (
	"errors"
	"fmt"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
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
	listener *listenerv3.Listener
	hcm      *hcmv3.HttpConnectionManager
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
					return newGateway(l, hcm)
				}
			}
		}
		return nil, fmt.Errorf("listener %s has no http_connection_manager", listener)
	}
	return nil, fmt.Errorf("no listener named %s", listener)
}

func newGateway(l *listenerv3.Listener, hcm *hcmv3.HttpConnectionManager) (*Gateway, error) {
	if hcm.GetRouteConfig() == nil {
		return nil, errors.New("the http_connection_manager has no inline route_config")
	}
	g := &Gateway{listener: l, hcm: hcm}
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

// Match returns the route Envoy picks for a POST (every gRPC, gRPC-Web and Connect call is
// one) for path to any host (the first match), with its timeouts and per-filter configs; ok
// is false when none matches.
func (g *Gateway) Match(path string) (rt *routev3.Route, ok bool, err error) {
	return g.MatchRequest("POST", path)
}

// MatchRequest is Match for a request of any HTTP method. Besides path and prefix, a route
// may match only on the ":method" header, exactly.
func (g *Gateway) MatchRequest(method, path string) (rt *routev3.Route, ok bool, err error) {
	vh := virtualHost(g.hcm.GetRouteConfig(), "*")
	if vh == nil {
		return nil, false, errors.New("no virtual host for any domain (\"*\")")
	}
	for i, rt := range vh.GetRoutes() {
		m := rt.GetMatch()
		if len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil || m.GetRuntimeFraction() != nil {
			return nil, false, fmt.Errorf("route %d: only path and prefix matches are supported", i)
		}
		methodHit := true
		for _, h := range m.GetHeaders() {
			exact := h.GetStringMatch().GetExact()
			if h.GetName() != ":method" || exact == "" || h.GetInvertMatch() || h.GetTreatMissingHeaderAsEmpty() {
				return nil, false, fmt.Errorf("route %d: the only header match supported is \":method\", exactly", i)
			}
			methodHit = methodHit && exact == method
		}
		if !methodHit {
			continue
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
	a := mostSpecific(g.authzFilter, rc, vh, rt)
	if a == nil {
		return true, nil
	}
	per := &extauthzv3.ExtAuthzPerRoute{}
	if err := a.UnmarshalTo(per); err != nil {
		return false, fmt.Errorf("per-route config of %s is a %s, not ExtAuthzPerRoute", g.authzFilter, a.MessageName())
	}
	return !per.GetDisabled(), nil
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

// UpstreamPath is the path the backend sees when rt routes a request for path: rt's
// prefix_rewrite in place of what it matched (the whole path for an exact match), else path.
// Other rewrites are an error, not a guess.
func UpstreamPath(rt *routev3.Route, path string) (string, error) {
	a := rt.GetRoute()
	if a.GetRegexRewrite() != nil || a.GetPathRewritePolicy() != nil || a.GetHostRewriteSpecifier() != nil {
		return "", fmt.Errorf("route %s: only prefix_rewrite is supported", rt.GetMatch())
	}
	if a.GetPrefixRewrite() == "" {
		return path, nil
	}
	matched := len(rt.GetMatch().GetPrefix())
	if rt.GetMatch().GetPath() != "" {
		matched = len(path)
	}
	return a.GetPrefixRewrite() + path[matched:], nil
}

// DirectAnswer is what Envoy answers itself for a route with a direct_response.
type DirectAnswer struct {
	Status uint32
	Body   string
	// Headers are the route's response_headers_to_add, by lower-case name.
	Headers map[string]string
	// Authorized says ext_authz checks the request first.
	Authorized bool
}

// Direct returns Envoy's own answer to method and path; ok is false when the route that
// matches (if any) is not a direct_response with an inline body.
func (g *Gateway) Direct(method, path string) (a DirectAnswer, ok bool, err error) {
	rt, ok, err := g.MatchRequest(method, path)
	if err != nil || !ok || rt.GetDirectResponse() == nil {
		return DirectAnswer{}, false, err
	}
	dr := rt.GetDirectResponse()
	a = DirectAnswer{Status: dr.GetStatus(), Body: dr.GetBody().GetInlineString(), Headers: map[string]string{}}
	for _, h := range rt.GetResponseHeadersToAdd() {
		a.Headers[strings.ToLower(h.GetHeader().GetKey())] = h.GetHeader().GetValue()
	}
	rc := g.hcm.GetRouteConfig()
	a.Authorized, err = g.authorized(rc, virtualHost(rc, "*"), rt)
	return a, true, err
}

// Routes are the routes of the virtual host for any domain, in the order Envoy tries them.
func (g *Gateway) Routes() []*routev3.Route {
	return virtualHost(g.hcm.GetRouteConfig(), "*").GetRoutes()
}
