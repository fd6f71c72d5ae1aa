package configcheck

import (
	"fmt"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bodylimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/body_size_limit/v3"
	connlimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	downstreamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// ListenerLimits are the bounds a gateway listener puts on its clients, as Envoy reads them;
// zero values mean the setting is absent (Envoy's default applies).
type ListenerLimits struct {
	// MaxConnections is the connection_limit network filter's cap on open connections.
	MaxConnections uint64
	// BufferBytes is the listener's per_connection_buffer_limit_bytes.
	BufferBytes uint32
	// IdleTimeout closes a connection without requests (common_http_protocol_options);
	// RequestHeadersTimeout bounds the wait for a request's headers.
	IdleTimeout, RequestHeadersTimeout time.Duration
	// MaxRequestHeadersKB bounds a request's headers.
	MaxRequestHeadersKB uint32
	// StreamWindowBytes and ConnectionWindowBytes are the HTTP/2 initial windows.
	StreamWindowBytes, ConnectionWindowBytes uint32
	// RemovedHeaders are the request headers the early header mutations remove, before
	// routing and before any filter sees them.
	RemovedHeaders []string
}

// Limits reads the limits of the gateway's listener and its HTTP connection manager.
func (g *Gateway) Limits() (ListenerLimits, error) {
	l := ListenerLimits{BufferBytes: g.listener.GetPerConnectionBufferLimitBytes().GetValue()}
	for _, fc := range g.listener.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			c := &connlimitv3.ConnectionLimit{}
			if f.GetTypedConfig().MessageIs(c) {
				if err := f.GetTypedConfig().UnmarshalTo(c); err != nil {
					return l, err
				}
				l.MaxConnections = c.GetMaxConnections().GetValue()
			}
		}
	}
	hcm := g.hcm
	l.IdleTimeout = hcm.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration()
	l.RequestHeadersTimeout = hcm.GetRequestHeadersTimeout().AsDuration()
	l.MaxRequestHeadersKB = hcm.GetMaxRequestHeadersKb().GetValue()
	l.StreamWindowBytes = hcm.GetHttp2ProtocolOptions().GetInitialStreamWindowSize().GetValue()
	l.ConnectionWindowBytes = hcm.GetHttp2ProtocolOptions().GetInitialConnectionWindowSize().GetValue()
	for _, ext := range hcm.GetEarlyHeaderMutationExtensions() {
		m := &headermutationv3.HeaderMutation{}
		if err := ext.GetTypedConfig().UnmarshalTo(m); err != nil {
			return l, fmt.Errorf("early header mutation %s: %w", ext.GetName(), err)
		}
		for _, mu := range m.GetMutations() {
			if r := mu.GetRemove(); r != "" {
				l.RemovedHeaders = append(l.RemovedHeaders, r)
			}
		}
	}
	return l, nil
}

// MaxRequestBytes is the largest request body Envoy lets through to path: the
// body_size_limit filter's max_request_bytes, unless the route (or its virtual host, or the
// route configuration: the most specific level decides) disables the filter. limited is false
// when nothing bounds the body.
func (g *Gateway) MaxRequestBytes(path string) (n uint64, limited bool, err error) {
	rt, ok, err := g.Match(path)
	if err != nil || !ok {
		return 0, false, fmt.Errorf("%s is not routed (%v)", path, err)
	}
	var filter string
	limit := &bodylimitv3.BodySizeLimit{}
	for _, f := range g.hcm.GetHttpFilters() {
		if f.GetTypedConfig().MessageIs(limit) && !f.GetDisabled() {
			if err := f.GetTypedConfig().UnmarshalTo(limit); err != nil {
				return 0, false, err
			}
			filter = f.GetName()
		}
	}
	if filter == "" || limit.GetMaxRequestBytes().GetValue() == 0 {
		return 0, false, nil
	}
	rc := g.hcm.GetRouteConfig()
	if a := mostSpecific(filter, rc, virtualHost(rc, "*"), rt); a != nil {
		fc := &routev3.FilterConfig{}
		if err := a.UnmarshalTo(fc); err != nil || fc.GetConfig() != nil {
			return 0, false, fmt.Errorf("%s: per-route config of %s must be a FilterConfig that only disables it (the filter has no per-route limit)", path, filter)
		}
		if fc.GetDisabled() {
			return 0, false, nil
		}
	}
	return limit.GetMaxRequestBytes().GetValue(), true, nil
}

// mostSpecific is the per-filter config of filter that applies to rt: the route's, else its
// virtual host's, else the route configuration's; nil when none configures it.
func mostSpecific(filter string, rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, rt *routev3.Route) *anypb.Any {
	for _, cfgs := range []map[string]*anypb.Any{rt.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), rc.GetTypedPerFilterConfig()} {
		if a, ok := cfgs[filter]; ok {
			return a
		}
	}
	return nil
}

// MaxDownstreamConnections is the process-wide cap on open downstream connections set by the
// overload manager's downstream-connections monitor; ok is false without one.
func MaxDownstreamConnections(b *bootstrapv3.Bootstrap) (n int64, ok bool, err error) {
	for _, m := range b.GetOverloadManager().GetResourceMonitors() {
		c := &downstreamv3.DownstreamConnectionsConfig{}
		if m.GetTypedConfig().MessageIs(c) {
			if err := m.GetTypedConfig().UnmarshalTo(c); err != nil {
				return 0, false, err
			}
			return c.GetMaxActiveDownstreamConnections(), true, nil
		}
	}
	return 0, false, nil
}
