package proxy

import (
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/plinth-dev/plinth/libs/platform/authn"
)

// dropped are request headers that describe the client's connection to the gateway, not the
// call: the transport sets its own, the browser's belong to the browser, and the account
// headers (id, name, role) are the gateway's to set.
var dropped = map[string]bool{
	"content-type": true, "user-agent": true, "te": true, "connection": true, "host": true,
	"content-length": true, "accept-encoding": true, "keep-alive": true, "upgrade": true,
	"proxy-connection": true, "transfer-encoding": true, "origin": true, "referer": true,
	"x-grpc-web": true, "x-user-agent": true, "cookie": true,
	authn.AccountHeader: true, authn.NameHeader: true, authn.RoleHeader: true, authn.ExpiresHeader: true,
}

// traceHeaders carry the W3C trace context. A tracing gateway injects its own (its span as
// the parent); one that does not trace passes the client's on untouched.
var traceHeaders = map[string]bool{"traceparent": true, "tracestate": true, "baggage": true}

// droppedResponse are response headers the gateway's own transport writes.
var droppedResponse = map[string]bool{"content-type": true, "te": true, "connection": true, "trailer": true, "date": true}

// forwardable reports whether a request header is passed to the backend.
func forwardable(key string, tracing bool) bool {
	switch {
	case dropped[key], tracing && traceHeaders[key], strings.HasPrefix(key, ":"), strings.HasPrefix(key, "grpc-"),
		strings.HasPrefix(key, "connect-"), strings.HasPrefix(key, "sec-"),
		strings.HasPrefix(key, "access-control-"):
		return false
	}
	return true
}

// outgoing turns the client's metadata into the backend call's, in place (md is the
// caller's own copy): everything that describes the call, minus any plinth-account-id, -name
// or -role the client sent (only a verified token names an account), plus the account's when
// the gateway verified a token (account.ID set). x-forwarded-for is the gateway's alone: it
// names the TCP peer and nothing a client sent, since any client can write the header and
// auth counts failed logins per the address it names (a client's own entries would let it
// pick its address and lock out whomever it likes). The gateway is the edge: no client of it
// is a proxy it trusts. A unix-socket peer has no address, and its calls carry none. A
// tracing gateway drops the client's trace context, to inject its own.
func outgoing(md metadata.MD, p *peer.Peer, account authn.Account, tracing bool) metadata.MD {
	for k := range md {
		if !forwardable(k, tracing) {
			delete(md, k)
		}
	}
	if account.ID != "" {
		for k, v := range account.Headers() {
			md[k] = v
		}
	}
	delete(md, forwardedFor)
	if ip := peerIP(p); ip != "" {
		md.Set(forwardedFor, ip)
	}
	return md
}

// forwardedFor names the client's address to the backend (auth believes it only on the
// gateway's own channel to it).
const forwardedFor = "x-forwarded-for"

// responseHeaders filters, in place, a backend's header or trailer metadata (grpc-go hands
// out copies) before it reaches the client.
func responseHeaders(md metadata.MD) metadata.MD {
	for k := range md {
		if droppedResponse[k] || strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			delete(md, k)
		}
	}
	return md
}

// peerIP is the client's IP without port, "" for a unix socket or an unknown peer.
func peerIP(p *peer.Peer) string {
	if p == nil {
		return ""
	}
	switch a := p.Addr.(type) {
	case *net.TCPAddr:
		// Unmap: an IPv4 client on a dual-stack listener is ::ffff:a.b.c.d to the kernel.
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap().String()
		}
		return ""
	case nil:
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil || net.ParseIP(host) == nil {
		return ""
	}
	return host
}
