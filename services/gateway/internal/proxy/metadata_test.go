package proxy

import (
	"net"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

func TestOutgoingMetadata(t *testing.T) {
	in := metadata.Pairs(
		"authorization", "Bearer plt_x", "plinth-account-id", "forged", "x-forwarded-for", "203.0.113.9",
		"content-type", "application/grpc", "user-agent", "grpc-go", ":authority", "gw",
		"grpc-accept-encoding", "gzip", "traceparent", "00-abc", "x-grpc-web", "1",
		"connect-protocol-version", "1", "origin", "http://x", "cookie", "session=1",
		"sec-fetch-mode", "cors", "x-request-id", "r1", "vagrant-token", "v",
	)
	tcp := &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}}
	out := outgoing(in, tcp, "")
	want := metadata.Pairs("authorization", "Bearer plt_x", "x-forwarded-for", "203.0.113.9, 127.0.0.1",
		"x-request-id", "r1", "vagrant-token", "v")
	if len(out) != len(want) {
		t.Fatalf("out = %v, want %v", out, want)
	}
	for k, v := range want {
		if got := out.Get(k); len(got) != 1 || got[0] != v[0] {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	out = outgoing(in, tcp, "account-7")
	if got := out.Get("plinth-account-id"); len(got) != 1 || got[0] != "account-7" {
		t.Errorf("verified account: %q", got)
	}
	unix := &peer.Peer{Addr: &net.UnixAddr{Name: "@", Net: "unix"}}
	if got := outgoing(metadata.MD{}, unix, "").Get("x-forwarded-for"); len(got) != 0 {
		t.Errorf("a unix-socket peer has no address to forward: %q", got)
	}
	if got := outgoing(metadata.MD{}, nil, "").Get("x-forwarded-for"); len(got) != 0 {
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
