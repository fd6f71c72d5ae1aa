package grpc

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// ClientAddress finds the address a login comes from, for per-address lockout. Behind the
// Envoy gateway every call comes from the gateway, so x-forwarded-for is believed — but only
// when the direct peer is a configured trusted proxy; otherwise anyone could pick their address.
type ClientAddress struct {
	trusted []netip.Prefix
}

// NewClientAddress parses the trusted proxy CIDRs (e.g. "127.0.0.1/32").
func NewClientAddress(trustedProxies []string) (*ClientAddress, error) {
	c := &ClientAddress{}
	for _, s := range trustedProxies {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: must be a CIDR such as 127.0.0.1/32", s)
		}
		c.trusted = append(c.trusted, p.Masked())
	}
	return c, nil
}

// Of returns the caller's address (no port), or "" when unknown (e.g. a unix socket).
func (c *ClientAddress) Of(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return ""
	}
	direct, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	direct = direct.Unmap()
	if !c.isTrusted(direct) {
		return direct.String()
	}
	// The right-most entry that is not itself a trusted proxy is the client.
	md, _ := metadata.FromIncomingContext(ctx)
	hops := strings.Split(strings.Join(md.Get("x-forwarded-for"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			continue
		}
		if a = a.Unmap(); !c.isTrusted(a) {
			return a.String()
		}
	}
	return direct.String()
}

func (c *ClientAddress) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
