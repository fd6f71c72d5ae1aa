package proxy

import (
	"net"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/plinth-dev/plinth/libs/platform/authn"
)

// dropped are request headers that describe the client's connection to the gateway, not the
// call: the transport sets its own, the browser's belong to the browser, the trace context is
// injected afresh by the client tracing handler (as a child of the gateway's span), and the
// account header is the gateway's to set.
var dropped = map[string]bool{
	"content-type": true, "user-agent": true, "te": true, "connection": true, "host": true,
	"content-length": true, "accept-encoding": true, "keep-alive": true, "upgrade": true,
	"proxy-connection": true, "transfer-encoding": true, "origin": true, "referer": true,
	"x-grpc-web": true, "x-user-agent": true, "traceparent": true, "tracestate": true,
	"baggage": true, "cookie": true, authn.AccountHeader: true,
}

// droppedResponse are response headers the gateway's own transport writes.
var droppedResponse = map[string]bool{"content-type": true, "te": true, "connection": true, "trailer": true, "date": true}

// forwardable reports whether a request header is passed to the backend.
func forwardable(key string) bool {
	switch {
	case dropped[key], strings.HasPrefix(key, ":"), strings.HasPrefix(key, "grpc-"),
		strings.HasPrefix(key, "connect-"), strings.HasPrefix(key, "sec-"),
		strings.HasPrefix(key, "access-control-"):
		return false
	}
	return true
}

// outgoing builds the backend call's metadata from the client's: everything that describes
// the call, minus any plinth-account-id the client sent (only a verified token names an
// account), plus account when the gateway verified a token, plus the client's address
// appended to x-forwarded-for as a proxy does.
func outgoing(in metadata.MD, p *peer.Peer, account string) metadata.MD {
	out := metadata.MD{}
	for k, vs := range in {
		if forwardable(k) {
			out[k] = vs
		}
	}
	if account != "" {
		out.Set(authn.AccountHeader, account)
	}
	if ip := peerIP(p); ip != "" {
		xff := strings.Join(in.Get("x-forwarded-for"), ", ")
		if xff != "" {
			xff += ", "
		}
		out.Set("x-forwarded-for", xff+ip)
	}
	return out
}

// responseHeaders filters a backend's header or trailer metadata before it reaches the client.
func responseHeaders(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range md {
		if !droppedResponse[k] && !strings.HasPrefix(k, ":") && !strings.HasPrefix(k, "grpc-") {
			out[k] = vs
		}
	}
	return out
}

// peerIP is the client's IP without port, "" for a unix socket or an unknown peer.
func peerIP(p *peer.Peer) string {
	if p == nil || p.Addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil || net.ParseIP(host) == nil {
		return ""
	}
	return host
}
