package front

import (
	"bytes"
	"cmp"
	"context"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthPort serves the gateway's port on 127.0.0.1 with a gRPC server holding the front's
// limits, calls counted by calls, and the gateway's health service (Watch: a stream anyone
// may hold without a token), with options o (a second's grace when unset). It returns the
// port's address.
func healthPort(t testing.TB, calls *netlimit.Calls, o ServeOptions) string {
	t.Helper()
	gs := grpc.NewServer(append(calls.ServerOptions(), ServerOptions(16<<20, 0)...)...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o.Grace = cmp.Or(o.Grace, time.Second)
	go func() { done <- Serve(ctx, lis, http.NotFoundHandler(), gs, o) }()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

// h2Streams is a raw HTTP/2 connection that opens health Watch streams as fast as it can
// write them, as an attacker would, and tallies how the gateway answers each.
type h2Streams struct {
	conn net.Conn
	fr   *http2.Framer

	mu                       sync.Mutex
	served, exhausted, reset int // streams answered SERVING, grpc-status 8, RST_STREAM
	done                     chan struct{}
}

func dialH2(t testing.TB, from, addr string) *h2Streams {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &h2Streams{conn: c, fr: http2.NewFramer(c, c), done: make(chan struct{})}
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write(h2Preface); err != nil {
		t.Fatal(err)
	}
	if err := s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	_ = s.fr.WriteWindowUpdate(0, 1<<30)
	go s.read()
	return s
}

// read tallies the answers: a response's first HEADERS (SERVING follows in DATA: counted
// then), a trailers-only refusal, a reset stream.
func (s *h2Streams) read() {
	defer close(s.done)
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return
		}
		s.mu.Lock()
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			for _, hf := range f.Fields {
				if f.StreamEnded() && hf.Name == "grpc-status" && hf.Value == "8" {
					s.exhausted++
				}
			}
		case *http2.DataFrame:
			if len(f.Data()) > 0 {
				s.served++
			}
		case *http2.RSTStreamFrame:
			s.reset++
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = s.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = s.fr.WritePing(true, f.Data)
			}
		}
		s.mu.Unlock()
	}
}

// open writes n health Watch requests on new streams, with no wait between them.
func (s *h2Streams) open(t testing.TB, n int) {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Watch"},
		{":authority", "gateway"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	empty := []byte{0, 0, 0, 0, 0} // HealthCheckRequest{} in its envelope
	for i := range n {
		id := uint32(2*i + 1)
		s.mu.Lock()
		err := s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
		if err == nil {
			err = s.fr.WriteData(id, true, empty)
		}
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
}

// tally is the answers so far.
func (s *h2Streams) tally() (served, exhausted, reset int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served, s.exhausted, s.reset
}

// TestStreamsPerConnectionCapped is issue #36's "No cap on HTTP/2 streams per connection":
// one unauthenticated connection opens 40,000 health Watch streams. The gateway serves at
// most MaxConcurrentStreams of them at once and refuses the rest (before: all 40,000 were
// held, +225 MB and a goroutine each).
func TestStreamsPerConnectionCapped(t *testing.T) {
	addr := healthPort(t, netlimit.NewCalls(netlimit.CallLimits{PerClient: 0}), ServeOptions{})
	c := dialH2(t, "127.0.0.1", addr)
	const attempts = 40_000
	c.open(t, attempts)
	eventually(t, "every stream answered", func() bool {
		served, exhausted, reset := c.tally()
		return served+exhausted+reset >= attempts
	})
	served, _, reset := c.tally()
	if served > MaxConcurrentStreams || reset < attempts-MaxConcurrentStreams {
		t.Errorf("%d of %d streams held on one connection (%d refused); want at most %d", served, attempts, reset, MaxConcurrentStreams)
	}
}

// TestCallsPerClientCapped: one address holding streams on several connections is held to
// its cap across them; the calls over it are refused ResourceExhausted, and another
// address is still served.
func TestCallsPerClientCapped(t *testing.T) {
	const perClient = 300
	calls := netlimit.NewCalls(netlimit.CallLimits{PerClient: perClient})
	addr := healthPort(t, calls, ServeOptions{})
	conns := []*h2Streams{dialH2(t, "127.0.0.1", addr), dialH2(t, "127.0.0.1", addr), dialH2(t, "127.0.0.1", addr)}
	for _, c := range conns {
		c.open(t, 200)
	}
	total := func() (served, exhausted int) {
		for _, c := range conns {
			s, e, _ := c.tally()
			served, exhausted = served+s, exhausted+e
		}
		return served, exhausted
	}
	eventually(t, "every stream answered", func() bool { s, e := total(); return s+e >= 600 })
	if served, exhausted := total(); served != perClient || exhausted != 600-perClient || calls.Refused() != int64(exhausted) {
		t.Errorf("one address on 3 connections: %d streams held, %d refused (counted %d); want %d held", served, exhausted, calls.Refused(), perClient)
	}
	// Another address is served.
	other := dialH2(t, "127.0.0.2", addr)
	other.open(t, 10)
	eventually(t, "another address served", func() bool { s, _, _ := other.tally(); return s == 10 })
}
