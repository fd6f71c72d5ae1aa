package front

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// within is the generous bound every "eventually" of these tests waits: they check that
// something happens, never how fast.
const within = 15 * time.Second

// servePort serves the gateway's port on 127.0.0.1 with a handler answering "ok" to every
// HTTP/1.1 request and a bare gRPC server, both with idle timeout idle, connections admitted
// by conns. It returns the port's address.
func servePort(t testing.TB, conns *netlimit.Conns, idle time.Duration) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(ServerOptions(16<<20, idle)...)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, lis, h, gs, ServeOptions{Grace: time.Second, IdleTimeout: idle, Conns: conns})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return lis.Addr().String()
}

// h1Client is one HTTP/1.1 keep-alive connection, from a chosen local address.
type h1Client struct {
	net.Conn
	r *bufio.Reader
}

func dialFrom(t testing.TB, from, addr string) *h1Client {
	t.Helper()
	c, err := tryDial(t, from, addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tryDial(t testing.TB, from, addr string) (*h1Client, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: within}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &h1Client{Conn: c, r: bufio.NewReader(c)}, nil
}

// refused reports whether a new connection from from is closed at accept: the kernel
// completes the handshake before the gateway accepts, so the reset arrives at the dial (when
// it is quick) or at the first request.
func refused(t testing.TB, from, addr string) bool {
	c, err := tryDial(t, from, addr)
	return err != nil || c.get() != nil
}

// get makes one request on the connection and reads the answer.
func (c *h1Client) get() error {
	_ = c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "ok" {
		return fmt.Errorf("answer %q: %v", b, err)
	}
	return nil
}

// eventually polls cond until it holds or within passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", within, what)
		}
	}
}

// TestConnCapPerClient: a client holding PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT connections has
// its next one closed at accept, while those it holds keep working and another client is
// served; once it closes some, it may connect again.
func TestConnCapPerClient(t *testing.T) {
	const perClient = 4
	conns := netlimit.NewConns(netlimit.ConnLimits{PerClient: perClient, Total: 100})
	addr := servePort(t, conns, 0)
	var held []*h1Client
	for range perClient {
		c := dialFrom(t, "127.0.0.1", addr)
		if err := c.get(); err != nil {
			t.Fatalf("connection %d of %d: %v", len(held)+1, perClient, err)
		}
		held = append(held, c)
	}
	if !refused(t, "127.0.0.1", addr) {
		t.Fatalf("connection %d from one client was served (cap %d)", perClient+1, perClient)
	}
	for i, c := range held {
		if err := c.get(); err != nil {
			t.Errorf("held connection %d stopped working: %v", i+1, err)
		}
	}
	if err := dialFrom(t, "127.0.0.2", addr).get(); err != nil {
		t.Errorf("another client was refused: %v", err)
	}
	if c, total := conns.Refused(); c != 1 || total != 0 {
		t.Errorf("refused %d per client, %d total; want 1, 0", c, total)
	}

	for _, c := range held[:2] {
		c.Close()
	}
	eventually(t, "the closed connections are given back", func() bool { return conns.Open() == perClient-2+1 })
	for i := range 2 {
		if err := dialFrom(t, "127.0.0.1", addr).get(); err != nil {
			t.Errorf("new connection %d after closing two: %v", i+1, err)
		}
	}
}

// TestConnCapTotal: at PLINTH_GATEWAY_MAX_CONNS the port closes every new connection, from
// any client, at accept.
func TestConnCapTotal(t *testing.T) {
	conns := netlimit.NewConns(netlimit.ConnLimits{PerClient: 10, Total: 3})
	addr := servePort(t, conns, 0)
	for _, from := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.2"} {
		if err := dialFrom(t, from, addr).get(); err != nil {
			t.Fatalf("from %s: %v", from, err)
		}
	}
	if !refused(t, "127.0.0.3", addr) {
		t.Fatal("a fourth connection was served (cap 3)")
	}
	if c, total := conns.Refused(); c != 0 || total != 1 {
		t.Errorf("refused %d per client, %d total; want 0, 1", c, total)
	}
}

// TestIdleConnectionsClosed: an HTTP/1.1 keep-alive connection and an HTTP/2 (gRPC)
// connection that carry no request for the idle timeout are closed by the gateway.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	conns := netlimit.NewConns(netlimit.ConnLimits{})
	addr := servePort(t, conns, idle)

	h1 := dialFrom(t, "127.0.0.1", addr)
	if err := h1.get(); err != nil {
		t.Fatal(err)
	}
	_ = h1.SetReadDeadline(time.Now().Add(within))
	if n, err := h1.r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("idle HTTP/1.1 connection: read %d bytes, %v; want it closed (EOF)", n, err)
	}

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cc.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("the HTTP/2 connection never became ready (%v)", s)
		}
	}
	if !cc.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("an idle HTTP/2 connection was not closed")
	}
	eventually(t, "the gateway holds no connection", func() bool { return conns.Open() == 0 })
}

// flakyListener fails its first Accepts the way a process out of file descriptors does.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	fail := l.fails > 0
	l.fails--
	l.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesEMFILE: running out of file descriptors (a connection flood) pauses the
// port; it does not end it.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := newSplit(&flakyListener{Listener: lis, fails: 3}, nil, ReadHeaderTimeout)
	defer sp.close()
	c := dialFrom(t, "127.0.0.1", lis.Addr().String())
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		conn, err := sp.h1.Accept()
		if err == nil {
			conn.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the port stopped after EMFILE: %v", err)
		}
	case <-time.After(within):
		t.Fatal("no connection accepted after EMFILE")
	}
}
