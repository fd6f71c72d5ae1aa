package grpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// ClientAddress finds the address a login comes from, for per-address lockout. A client picks
// its own x-forwarded-for, so on auth's own port the address is the TCP peer's, and the header
// is believed only from a configured trusted proxy that is not a loopback address (on loopback
// every local account is a "proxy"). The gateway proves itself instead: on the gateway listener
// (a private unix socket, or mutual TLS with the gateway's certificate) the right-most
// x-forwarded-for entry — the one the gateway wrote — is the client.
type ClientAddress struct {
	trusted []netip.Prefix
	// gateway: every caller is the gateway, proven by the listener it came through.
	gateway bool
}

// ErrLoopbackProxy refuses a trusted proxy range that holds a loopback or unspecified
// address: every local process connects from there, so believing its x-forwarded-for lets any
// local account choose its address (and its victim's). The gateway uses the gateway listener.
var ErrLoopbackProxy = errors.New("must not hold a loopback address: every local account connects from there; let the gateway reach auth on PLINTH_AUTH_GATEWAY_ADDR instead")

// NewClientAddress is the address rule of auth's own port: the TCP peer, or the x-forwarded-for
// of a peer in trustedProxies (CIDRs such as 172.29.71.10/32, never loopback).
func NewClientAddress(trustedProxies []string) (*ClientAddress, error) {
	c := &ClientAddress{}
	for _, s := range trustedProxies {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: must be a CIDR such as 172.29.71.10/32", s)
		}
		p = p.Masked()
		if holdsLoopback(p) {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, ErrLoopbackProxy)
		}
		c.trusted = append(c.trusted, p)
	}
	return c, nil
}

// GatewayClientAddress is the address rule of the gateway listener: the right-most
// x-forwarded-for entry, which the gateway set (it replaces whatever its own clients sent).
func GatewayClientAddress() *ClientAddress { return &ClientAddress{gateway: true} }

// holdsLoopback reports whether p contains a loopback or unspecified address (127.0.0.0/8,
// ::1, 0.0.0.0, ::, and the IPv4-mapped forms), or is wider than any of them.
func holdsLoopback(p netip.Prefix) bool {
	for _, s := range []string{"127.0.0.0/8", "::1/128", "0.0.0.0/32", "::/128", "::ffff:127.0.0.0/104", "::ffff:0.0.0.0/128"} {
		lo := netip.MustParsePrefix(s)
		if p.Overlaps(lo) {
			return true
		}
	}
	return false
}

// Of returns the caller's address (no port), or "" when unknown (e.g. a unix socket).
func (c *ClientAddress) Of(ctx context.Context) string {
	direct, ok := peerAddr(ctx)
	if c.gateway {
		// Only the last entry: any before it came from the gateway's client.
		if a, found := forwarded(ctx, nil); found {
			return a.String()
		}
	} else if ok && c.isTrusted(direct) {
		// The right-most entry that is not itself a trusted proxy is the client.
		if a, found := forwarded(ctx, c.isTrusted); found {
			return a.String()
		}
	}
	if !ok {
		return ""
	}
	return direct.String()
}

// peerAddr is the TCP peer's address, unmapped; false for a unix socket or no peer.
func peerAddr(ctx context.Context) (netip.Addr, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}, false
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// forwarded is the right-most x-forwarded-for entry that parses and that skip does not pass
// over; with skip nil, the right-most entry alone (false when it does not parse).
func forwarded(ctx context.Context, skip func(netip.Addr) bool) (netip.Addr, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	hops := strings.Split(strings.Join(md.Get("x-forwarded-for"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			if skip == nil {
				return netip.Addr{}, false
			}
			continue
		}
		if a = a.Unmap(); skip == nil || !skip(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (c *ClientAddress) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
