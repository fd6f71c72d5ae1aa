package netlimit

import (
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestClientKey: a client is its IPv4 address, or its IPv6 /64; a unix socket peer has none.
func TestClientKey(t *testing.T) {
	key := func(a net.Addr) string {
		k, ok := ClientKey(a)
		if !ok {
			return "none"
		}
		return k.String()
	}
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 1}, "2001:db8:1:2::"},
		{&net.UnixAddr{Name: "@", Net: "unix"}, "none"},
	} {
		if got := key(tt.addr); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.addr, got, tt.want)
		}
	}
}

// TestRefusalsLoggedOncePerMinute: a client refused again and again is logged once per
// LogEvery; another client is logged on its own; past maxLogged remembered addresses a new
// one is not logged until old entries expire.
func TestRefusalsLoggedOncePerMinute(t *testing.T) {
	var buf testenv.SyncBuffer
	r := newRefusalLog(slog.New(slog.NewTextHandler(&buf, nil)), "refused")
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	lines := func() int { return strings.Count(buf.String(), "\n") }
	for range 100 {
		r.note(a, "limit", 1)
	}
	if n := lines(); n != 1 {
		t.Fatalf("100 refusals of one address within a minute: %d lines, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "level=INFO") || !strings.Contains(buf.String(), "client=192.0.2.1") {
		t.Errorf("the line does not name the client at INFO: %s", buf.String())
	}
	r.note(b)
	now = now.Add(LogEvery - time.Second)
	r.note(a)
	if n := lines(); n != 2 {
		t.Fatalf("another address, then the first within the minute: %d lines, want 2", n)
	}
	now = now.Add(time.Second)
	r.note(a)
	if n := lines(); n != 3 {
		t.Fatalf("the first address a minute later: %d lines, want 3", n)
	}

	// A flood from many addresses: memory and log stay bounded.
	for i := range 2 * maxLogged {
		r.note(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if len(r.last) > maxLogged {
		t.Errorf("%d addresses remembered, bound %d", len(r.last), maxLogged)
	}
	if n := lines(); n > 3+maxLogged {
		t.Errorf("%d lines for %d addresses, bound %d", n, 2*maxLogged, 3+maxLogged)
	}
	now = now.Add(LogEvery)
	before := lines()
	r.note(netip.MustParseAddr("198.51.100.1"))
	if lines() != before+1 {
		t.Error("a new address was not logged once the old entries expired")
	}
}

// TestListenerClosesOverCap: connections over the per-client cap are closed at accept and
// counted; a closed one gives its place back.
func TestListenerClosesOverCap(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := NewConns(ConnLimits{PerClient: 2})
	lis := conns.Listener(raw)
	defer lis.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first, _ := dial(), dial()
	s1, s2 := <-accepted, <-accepted
	// The kernel completes the handshake before the accept: the reset arrives at the dial
	// (when it is quick) or at the first read.
	if third, err := net.Dial("tcp", raw.Addr().String()); err == nil {
		defer third.Close()
		_ = third.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := third.Read(make([]byte, 1)); err == nil {
			t.Fatal("the third connection was not closed")
		}
	}
	if c, _ := conns.Refused(); c != 1 || conns.Open() != 2 {
		t.Fatalf("refused %d, open %d; want 1, 2", c, conns.Open())
	}
	first.Close()
	s1.Close()
	dial()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted after one was closed")
	}
	s2.Close()
}
