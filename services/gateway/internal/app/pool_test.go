package app

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestConnPoolOutgrowsStreamCap: a backend that carries perConn streams a connection (every
// Plinth server: server.DefaultMaxConcurrentStreams) still gets the gateway's calls past
// that many, on further connections; only past every connection's share do calls wait.
func TestConnPoolOutgrowsStreamCap(t *testing.T) {
	const perConn, conns = 4, 3
	var held atomic.Int64
	gs := grpc.NewServer(grpc.MaxConcurrentStreams(perConn), grpc.ForceServerCodecV2(hostiletest.RawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		held.Add(1)
		defer held.Add(-1)
		if err := ss.SendMsg(new([]byte)); err != nil {
			return err
		}
		<-ss.Context().Done()
		return nil
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	ccs := make([]*grpc.ClientConn, conns)
	for i := range ccs {
		if ccs[i], err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ccs[i].Close() })
	}
	pool := newConnPool(ccs, perConn)
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	open := func(timeout time.Duration) (context.CancelFunc, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		cs, err := pool.NewStream(ctx, desc, "/test.Hold/Hold", grpc.ForceCodecV2(hostiletest.RawCodec{}))
		if err == nil {
			err = cs.RecvMsg(new([]byte))
		}
		return cancel, err
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range perConn * conns {
		cancel, err := open(30 * time.Second)
		cancels = append(cancels, cancel)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	if n := held.Load(); n != perConn*conns {
		t.Fatalf("the backend holds %d streams; want %d", n, perConn*conns)
	}
	if _, err := open(300 * time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a stream past every connection's share: %v; want it to wait", err)
	}
	// A call that ends frees its place.
	cancels[0]()
	cancel, err := open(30 * time.Second)
	cancels = append(cancels, cancel)
	if err != nil {
		t.Fatalf("a stream after one ended: %v", err)
	}
}
