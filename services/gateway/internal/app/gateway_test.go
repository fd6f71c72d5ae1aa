package app_test

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// unaryTimeout is TestGateway's gateway deadline for unary calls: short enough that a stream
// visibly outlives it, long enough for a login's Argon2 hash on a loaded machine (400 ms was not).
const unaryTimeout = 2 * time.Second

// TestGateway runs one real auth and the in-process backends behind a gateway and checks
// each behaviour through the gateway's port.
func TestGateway(t *testing.T) {
	s := newSuite(t)
	g := s.gateway(t, app.Options{}, "PLINTH_GATEWAY_UNARY_TIMEOUT="+unaryTimeout.String())
	token := login(t, g.conn)

	t.Run("token routes need a live token", func(t *testing.T) {
		vg := lvmdpb.NewVGServiceClient(g.conn)
		_, err := vg.GetFreeBytes(ctxT(t), &lvmdpb.GetFreeBytesRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("no token: %v", err)
		}
		_, err = vg.GetFreeBytes(bearer(ctxT(t), "plt_not-a-token"), &lvmdpb.GetFreeBytesRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("bad token: %v", err)
		}
		if s.lvmd.take() != nil {
			t.Fatal("a refused call reached the backend")
		}
		resp, err := vg.GetFreeBytes(bearer(ctxT(t), token), &lvmdpb.GetFreeBytesRequest{})
		if err != nil || resp.GetFreeBytes() != freeBytes {
			t.Fatalf("live token over the unix-socket backend: %v %v", resp, err)
		}
	})

	t.Run("account header is the gateway's", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(bearer(ctxT(t), token),
			"plinth-account-id", "forged", "x-forwarded-for", "203.0.113.9")
		if _, err := statspb.NewStatsServiceClient(g.conn).GetClusterStats(ctx, &statspb.GetClusterStatsRequest{}); err != nil {
			t.Fatal(err)
		}
		md := s.stats.take()
		if got := md.Get("plinth-account-id"); len(got) != 1 || got[0] == "forged" || got[0] == "" {
			t.Fatalf("backend saw account %q, want the token's account only", got)
		}
		// The client's own x-forwarded-for is replaced by its TCP address (issue #36).
		if got := md.Get("x-forwarded-for"); len(got) != 1 || got[0] != "127.0.0.1" {
			t.Fatalf("x-forwarded-for %q, want the client's TCP address alone", got)
		}
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+token {
			t.Fatal("the token must reach the backend, which verifies it too")
		}
		// An Own route: no token check, and still no account header from the client.
		ctx = metadata.AppendToOutgoingContext(ctxT(t), "plinth-account-id", "forged")
		_, err := vagrantpb.NewVagrantClient(g.conn).GetVersionInfo(ctx, &emptypb.Empty{})
		if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), "GetVersionInfo") {
			t.Fatalf("Own route must reach vagrant-server (which answers Unimplemented here): %v", err)
		}
		if md := s.vagrant.take(); md == nil || len(md.Get("plinth-account-id")) != 0 {
			t.Fatalf("vagrant-server saw %v", md)
		}
	})

	t.Run("streams outlive the unary timeout", func(t *testing.T) {
		// Enough messages to outlast the unary timeout.
		n := int(unaryTimeout/watchGap) + 2
		ctx := metadata.AppendToOutgoingContext(bearer(ctxT(t), token), "x-watch-count", strconv.Itoa(n))
		stream, err := lvmdpb.NewVGServiceClient(g.conn).Watch(ctx, &lvmdpb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range n {
			m, err := stream.Recv()
			if err != nil || m.GetFreeBytes() != uint64(freeBytes+i) {
				t.Fatalf("message %d after %v: %v %v", i, time.Since(start), m, err)
			}
		}
		if _, err := stream.Recv(); err != io.EOF {
			t.Fatalf("end of stream: %v", err)
		}
		if time.Since(start) < unaryTimeout {
			t.Fatal("the stream was shorter than the unary timeout: the test proves nothing")
		}
	})

	t.Run("unknown service", func(t *testing.T) {
		err := g.conn.Invoke(ctxT(t), "/no.Such/Method", &lvmdpb.Empty{}, &lvmdpb.Empty{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("revoked token is refused at once", func(t *testing.T) {
		tok := login(t, g.conn)
		vg := lvmdpb.NewVGServiceClient(g.conn)
		if _, err := vg.GetFreeBytes(bearer(ctxT(t), tok), &lvmdpb.GetFreeBytesRequest{}); err != nil {
			t.Fatal(err) // now cached for 30 s
		}
		if _, err := authpb.NewAuthServiceClient(g.conn).Logout(bearer(ctxT(t), tok), &authpb.LogoutRequest{}); err != nil {
			t.Fatalf("logout through the gateway: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := vg.GetFreeBytes(bearer(ctxT(t), tok), &lvmdpb.GetFreeBytesRequest{})
			if status.Code(err) == codes.Unauthenticated {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("revoked token still accepted after 5s (cache TTL 30s): %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("gRPC-Web and Connect", func(t *testing.T) { testWebProtocols(t, g, token) })
	t.Run("CORS", func(t *testing.T) { testCORS(t, g) })
	t.Run("health and reflection", func(t *testing.T) { testHealthAndReflection(t, g) })
	t.Run("trace context", func(t *testing.T) { testTraceContext(t, s, g, token) })
	t.Run("access log and metrics", func(t *testing.T) { testAccessLogAndMetrics(t, s, g, token) })
	t.Run("console mount", func(t *testing.T) { testConsoleMount(t, s) })
	t.Run("Koor UI", func(t *testing.T) { testKoorUI(t, s) })
	t.Run("Koor v0.6.0 UI", func(t *testing.T) { testKoorV1UI(t, s) })
	t.Run("hostile client", func(t *testing.T) {
		// Through the gateway to the in-process backends: garbage metadata, 64 KiB of headers,
		// huge and NUL strings, cut streams; the gateway must answer and stay healthy.
		hostiletest.Run(t, hostiletest.Target{Conn: g.conn, Services: []string{"proto.VGService", "stats.StatsService", "api.services.stats.v1.StatsService"},
			Metadata: metadata.Pairs("authorization", "Bearer "+token)})
	})
	t.Run("undecodable requests", func(t *testing.T) { testUndecodable(t, s, g, token) })
	t.Run("shutdown ends streams", func(t *testing.T) { testShutdownEndsStreams(t, s, token) })
	t.Run("unconfigured backend", func(t *testing.T) {
		testUnconfiguredBackend(t, s)
	})
}

func testUnconfiguredBackend(t *testing.T, s *suite) {
	g := s.gateway(t, app.Options{})
	err := g.conn.Invoke(ctxT(t), "/cnct.kaas.api.Cluster/GetCluster", &lvmdpb.Empty{}, &lvmdpb.Empty{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "kaas") ||
		!strings.Contains(status.Convert(err).Message(), "PLINTH_GATEWAY_BACKEND_KAAS") {
		t.Fatalf("got %v", err)
	}
}

// testShutdownEndsStreams: a stream that would run for minutes ends when the gateway shuts
// down, so the graceful stop finishes at once instead of at its deadline.
func testShutdownEndsStreams(t *testing.T, s *suite, token string) {
	g := s.gateway(t, app.Options{}, "PLINTH_SHUTDOWN_TIMEOUT=20s")
	ctx := metadata.AppendToOutgoingContext(bearer(ctxT(t), token), "x-watch-count", "1000")
	stream, err := lvmdpb.NewVGServiceClient(g.conn).Watch(ctx, &lvmdpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g.running.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v with a stream open", d)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				t.Fatal("the stream ended as if complete")
			}
			break
		}
	}
}
