package front

import (
	"bufio"
	"context"
	"errors"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// closedWithin reports whether the gateway closes c (EOF or reset) within within, reading
// and dropping what it sends first (its HTTP/2 settings, an answer).
func closedWithin(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return nil
}

// TestH2WithoutRequestClosed is issue #36's "HTTP/2 connections that send only the preface
// are held 126 s": a connection that sends the preface, or the preface and its settings, and
// no request is closed after the header timeout, as an HTTP/1.1 one is (before: held until
// grpc-go's 120 s handshake timeout, or its 2-minute idle timeout). A connection that made a
// request is left to the idle timeout.
func TestH2WithoutRequestClosed(t *testing.T) {
	const header = 300 * time.Millisecond
	conns := netlimit.NewConns(netlimit.ConnLimits{})
	addr := healthPort(t, netlimit.NewCalls(netlimit.CallLimits{PerClient: 0}), ServeOptions{HeaderTimeout: header, Conns: conns})

	for _, tt := range []struct {
		name     string
		settings bool
	}{{"preface only", false}, {"preface and settings", true}} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(h2Preface); err != nil {
				t.Fatal(err)
			}
			if tt.settings {
				if err := http2.NewFramer(c, c).WriteSettings(); err != nil {
					t.Fatal(err)
				}
			}
			if err := closedWithin(c); err != nil {
				t.Errorf("a connection without a request was held: %v", err)
			}
		})
	}
	eventually(t, "the gateway holds no connection", func() bool { return conns.Open() == 0 })

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	quiet, qcancel := context.WithTimeout(ctx, 4*header)
	defer qcancel()
	if cc.WaitForStateChange(quiet, connectivity.Ready) {
		t.Errorf("a connection that made a request was closed (%v)", cc.GetState())
	}
}

// TestTrickledBodyCut is issue #36's "an HTTP/1.1 body trickled at 1 byte / 5 s stays open
// > 150 s": a Connect call to the public Login whose body comes a byte at a time is cut at
// the body timeout with DeadlineExceeded in its protocol, its connection closed, and nothing
// reaches the backend.
func TestTrickledBodyCut(t *testing.T) {
	addr, got := loginPort(t, ServeOptions{BodyTimeout: 300 * time.Millisecond})
	for _, tt := range []struct{ path, ct string }{
		{login, "application/json"}, {jobStream, "application/connect+json"}, {login, "application/grpc-web+proto"},
	} {
		t.Run(tt.ct, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const size = 1000 // at one byte per 100 ms: 100 s
			head := "POST " + tt.path + " HTTP/1.1\r\nHost: gateway\r\nContent-Type: " + tt.ct + "\r\nContent-Length: 1000\r\n\r\n"
			if _, err := io.WriteString(c, head); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for range size {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := c.Write([]byte{0}); err != nil {
						return
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(within))
			r := bufio.NewReader(c)
			if resp, err := http.ReadResponse(r, nil); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				grpcStatus := resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
				if !strings.Contains(string(b), "deadline_exceeded") && grpcStatus != "4" {
					t.Errorf("answer %d grpc-status %q %s; want deadline_exceeded", resp.StatusCode, grpcStatus, b)
				}
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("a trickled body kept its connection")
			}
			if err := closedWithin(c); err != nil {
				t.Errorf("the connection stayed open after the answer: %v", err)
			}
			if l := got.take(); len(l) != 0 {
				t.Errorf("the backend got %q", l)
			}
		})
	}
}
