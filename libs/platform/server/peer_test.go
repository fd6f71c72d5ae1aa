package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// h2Preface opens a cleartext HTTP/2 connection (RFC 9113 §3.4); an empty SETTINGS frame
// follows it.
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// rawConn opens a TCP connection from the local address from to addr and starts HTTP/2 on
// it, as any client would before its first call. It reports whether the server answered
// (its SETTINGS): a connection closed at accept answers nothing.
func rawConn(t *testing.T, from, addr string) (net.Conn, bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, false
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(h2Preface); err != nil {
		return c, false
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadFull(c, make([]byte, 9)) // the server's first frame header
	_ = c.SetReadDeadline(time.Time{})
	return c, err == nil
}

// clientFrom is a gRPC client whose connection leaves from the local address from.
func clientFrom(t *testing.T, from, addr string) *grpc.ClientConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// watch opens a health Watch stream (no token needed) and waits for its first answer.
func watch(ctx context.Context, cc *grpc.ClientConn) error {
	w, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	return err
}

// TestConnectionsPerAddressCapped is issue #36 on a service's own port: an unauthenticated
// client opening connections from one address has those over DefaultMaxConnsPerClient
// closed at accept, while those it holds keep working and another address (127.0.0.2) is
// served.
func TestConnectionsPerAddressCapped(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	reg := prometheus.NewRegistry()
	conn := serveTest(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Metrics: reg})
	addr := conn.Target()
	var held []net.Conn
	for i := range DefaultMaxConnsPerClient {
		c, ok := rawConn(t, "127.0.0.1", addr)
		if !ok {
			t.Fatalf("connection %d of %d from one address was refused", i+1, DefaultMaxConnsPerClient)
		}
		held = append(held, c)
	}
	for i := range 3 {
		if _, ok := rawConn(t, "127.0.0.1", addr); ok {
			t.Fatalf("connection %d from one address was served (cap %d)", DefaultMaxConnsPerClient+i+1, DefaultMaxConnsPerClient)
		}
	}
	if _, ok := rawConn(t, "127.0.0.2", addr); !ok {
		t.Error("another address was refused")
	}
	if n := counter(t, reg, "plinth_grpc_connections_refused_total"); n != 3 {
		t.Errorf("plinth_grpc_connections_refused_total = %v, want 3", n)
	}
	// Three refusals, one line: a flood of connections does not flood the log.
	if n := strings.Count(logs.String(), "connection closed at accept"); n != 1 || !strings.Contains(logs.String(), "setting=PLINTH_MAX_CONNS_PER_CLIENT") {
		t.Errorf("%d log lines for 3 refusals of one address, want 1 naming the setting:\n%s", n, logs.String())
	}
	// Closing some gives their places back.
	for _, c := range held[:2] {
		c.Close()
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, ok := rawConn(t, "127.0.0.1", addr); !ok; _, ok = rawConn(t, "127.0.0.1", addr) {
		if time.Now().After(deadline) {
			t.Fatal("no new connection served after closing two")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCallsPerAddressCapped is issue #36's 40 connections × 256 health Watch streams on a
// service's own port: one address holds at most DefaultMaxCallsPerClient calls across its
// connections (here 9, each carrying its 256), the next is refused ResourceExhausted naming
// the limit, and another address is served.
func TestCallsPerAddressCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	conn := serveTest(t, Options{Metrics: reg})
	addr := conn.Target()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := (DefaultMaxCallsPerClient + DefaultMaxConcurrentStreams) / DefaultMaxConcurrentStreams
	clients := make([]*grpc.ClientConn, conns)
	for i := range clients {
		clients[i] = clientFrom(t, "127.0.0.1", addr)
	}
	var wg sync.WaitGroup
	errs := make(chan error, DefaultMaxCallsPerClient)
	for i := range DefaultMaxCallsPerClient {
		wg.Go(func() {
			if err := watch(ctx, clients[i/DefaultMaxConcurrentStreams]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a stream within the cap: %v", err)
	}
	err := watch(ctx, clients[conns-1])
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "at most 2048 at once: PLINTH_MAX_CALLS_PER_CLIENT") {
		t.Fatalf("stream %d from one address across %d connections: %v; want ResourceExhausted naming the limit", DefaultMaxCallsPerClient+1, conns, err)
	}
	if n := counter(t, reg, "plinth_grpc_calls_refused_total"); n != 1 {
		t.Errorf("plinth_grpc_calls_refused_total = %v, want 1", n)
	}
	if err := watch(ctx, clientFrom(t, "127.0.0.2", addr)); err != nil {
		t.Errorf("another address: %v", err)
	}
}

// counter is the value of the metric name in reg (summed over its labels).
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestRefusedCallLeavesNoNote: a unary request grpc-go decoded (and could not: a note in
// the codec) before the call cap refused it leaves no note behind.
func TestRefusedCallLeavesNoNote(t *testing.T) {
	srv := startTest(t, Options{MaxCallsPerClient: 1})
	cc := clientFrom(t, "127.0.0.1", srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := watch(ctx, cc); err != nil { // holds the one call allowed
		t.Fatal(err)
	}
	var out []byte
	err := cc.Invoke(ctx, "/grpc.health.v1.Health/Check", &malformed, &out, grpc.ForceCodecV2(hostiletest.RawCodec{}))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a call over the cap: %v; want ResourceExhausted", err)
	}
	if n := srv.codec.pending(); n != 0 {
		t.Errorf("%d decode failures are still noted after the refused call", n)
	}
}

// TestUnixSocketNotCapped: peers of a unix socket have no address to tell them apart, so
// neither cap applies there (the socket's 0600 mode guards it).
func TestUnixSocketNotCapped(t *testing.T) {
	sock := "unix://" + t.TempDir() + "/s.sock"
	startTest(t, Options{GRPCAddr: sock, MaxConnsPerClient: 1, MaxCallsPerClient: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		cc, err := grpc.NewClient(sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		for j := range 2 {
			if err := watch(ctx, cc); err != nil {
				t.Fatalf("connection %d, stream %d on the unix socket: %v", i+1, j+1, err)
			}
		}
	}
}
