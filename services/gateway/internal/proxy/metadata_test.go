package proxy

import (
	"net"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

func TestOutgoingMetadata(t *testing.T) {
	in := metadata.Pairs(
		"authorization", "Bearer plt_x", "plinth-account-id", "forged", "plinth-account-name", "admin",
		"plinth-account-role", "admin", "x-forwarded-for", "203.0.113.9",
		"content-type", "application/grpc", "user-agent", "grpc-go", ":authority", "gw",
		"grpc-accept-encoding", "gzip", "traceparent", "00-abc", "x-grpc-web", "1",
		"connect-protocol-version", "1", "origin", "http://x", "cookie", "session=1",
		"sec-fetch-mode", "cors", "x-request-id", "r1", "vagrant-token", "v",
	)
	tcp := &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}}
	out := outgoing(in.Copy(), tcp, authn.Account{}, true)
	// The client's own x-forwarded-for is replaced by its TCP address: it cannot pick one.
	want := metadata.Pairs("authorization", "Bearer plt_x", "x-forwarded-for", "127.0.0.1",
		"x-request-id", "r1", "vagrant-token", "v")
	if len(out) != len(want) {
		t.Fatalf("out = %v, want %v", out, want)
	}
	for k, v := range want {
		if got := out.Get(k); len(got) != 1 || got[0] != v[0] {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	out = outgoing(in.Copy(), tcp, authn.Account{ID: "account-7", Name: "vera", Role: authz.Viewer}, true)
	for k, v := range map[string]string{"plinth-account-id": "account-7", "plinth-account-name": "vera", "plinth-account-role": "viewer"} {
		if got := out.Get(k); len(got) != 1 || got[0] != v {
			t.Errorf("verified account: %s = %q, want only %q", k, got, v)
		}
	}
	// A gateway that does not trace passes the client's trace context on as it came.
	out = outgoing(in.Copy(), tcp, authn.Account{}, false)
	if got := out.Get("traceparent"); len(got) != 1 || got[0] != "00-abc" {
		t.Errorf("untraced: traceparent %q, want the client's", got)
	}
	for _, k := range []string{"plinth-account-id", "plinth-account-name", "plinth-account-role"} {
		if got := out.Get(k); len(got) != 0 {
			t.Errorf("untraced: the forged %s passed: %q", k, got)
		}
	}
	forged := metadata.Pairs("x-forwarded-for", "203.0.113.9", "X-Forwarded-For", "198.51.100.1, 192.0.2.1")
	if got := outgoing(forged.Copy(), tcp, authn.Account{}, true).Get("x-forwarded-for"); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("several forged x-forwarded-for: %q, want the peer's address alone", got)
	}
	unix := &peer.Peer{Addr: &net.UnixAddr{Name: "@", Net: "unix"}}
	if got := outgoing(forged.Copy(), unix, authn.Account{}, true).Get("x-forwarded-for"); len(got) != 0 {
		t.Errorf("a unix-socket peer has no address to forward, and its own must not pass: %q", got)
	}
	if got := outgoing(forged.Copy(), nil, authn.Account{}, true).Get("x-forwarded-for"); len(got) != 0 {
		t.Errorf("no peer: %q", got)
	}
}

func TestResponseHeaders(t *testing.T) {
	got := responseHeaders(metadata.Pairs("content-type", "application/grpc", "grpc-status", "0",
		"plinth-account-id", "u1", "x-custom", "1"))
	if len(got) != 2 || got.Get("x-custom")[0] != "1" || got.Get("plinth-account-id")[0] != "u1" {
		t.Fatalf("got %v", got)
	}
}

func TestPeerIP(t *testing.T) {
	for addr, want := range map[net.Addr]string{
		&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}:        "10.0.0.1",
		&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.2"), Port: 1}: "10.0.0.2", // IPv4 on a dual-stack listener
		&net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1}:     "2001:db8::7",
		&net.TCPAddr{IP: nil, Port: 1}:                            "",
		&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}:           "",
		&net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 53}:      "192.0.2.1",
	} {
		if got := peerIP(&peer.Peer{Addr: addr}); got != want {
			t.Errorf("peerIP(%v) = %q, want %q", addr, got, want)
		}
	}
	if got := peerIP(&peer.Peer{}); got != "" {
		t.Errorf("no address: %q", got)
	}
}
