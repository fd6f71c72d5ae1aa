package front

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	_ "github.com/plinth-dev/plinth/libs/api/services/auth" // Login's descriptor, for vanguard
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// countingListener counts every byte the server reads from its connections.
type countingListener struct {
	net.Listener
	read *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// zeros yields n zero bytes without holding them.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), z.n)
	clear(p[:k])
	z.n -= k
	return k, nil
}

// TestOversizedRequestRefusedUnread sends auth's public Login a message twice its route's
// limit in every protocol and checks the refusal and that the gateway read little of it:
// nothing past the headers when the size is announced (Content-Length, an envelope's
// prefix), at most the limit when it is not (a chunked Connect unary body).
func TestOversizedRequestRefusedUnread(t *testing.T) {
	const login = "/services.auth.AuthService/Login"
	limit := routes.MaxRequestBytes(routes.Auth)
	size := 2 * limit
	var called atomic.Int64
	const maxMessageBytes = 16 << 20 // PLINTH_GATEWAY_MAX_MESSAGE_BYTES's default
	gs := grpc.NewServer(append(ServerOptions(maxMessageBytes, 0), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		if err := ss.RecvMsg(new(wrapperspb.BytesValue)); err != nil {
			return err
		}
		called.Add(1)
		return status.Error(codes.Unimplemented, "test backend")
	}))...)
	h, err := New(Options{GRPC: gs, Services: []string{"services.auth.AuthService"}, CORSOrigins: []string{"*"}, MaxMessageBytes: maxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, countingListener{Listener: lis, read: &read}, h, gs, ServeOptions{Grace: time.Second})
	}()
	t.Cleanup(func() { cancel(); <-done })
	envelope := func(n int) []byte {
		b := make([]byte, 5)
		binary.BigEndian.PutUint32(b[1:], uint32(n))
		return b
	}
	// bound is what the gateway may read beyond the body it accepted: headers, buffers.
	const slack = 512 << 10

	for _, tt := range []struct {
		name, contentType string
		prefix            []byte
		chunked           bool
		maxRead           int
		wantStatus        int
		wantGRPC          string // grpc-status (gRPC-Web); "" for Connect
		wantBody          string
	}{
		{"connect json", "application/json", nil, false, slack, http.StatusTooManyRequests, "", "resource_exhausted"},
		{"connect proto", "application/proto", nil, false, slack, http.StatusTooManyRequests, "", "resource_exhausted"},
		{"connect proto chunked", "application/proto", nil, true, limit + slack, http.StatusTooManyRequests, "", "resource_exhausted"},
		{"grpc-web", "application/grpc-web+proto", envelope(size), false, slack, http.StatusOK, "8", ""},
		{"connect streaming", "application/connect+proto", envelope(size), false, slack, http.StatusOK, "", "resource_exhausted"},
		// net/http discards up to 256 KiB of a chunked body the handler left unread before it
		// closes the connection (maxPostHandlerReadBytes): read and dropped, never buffered.
		{"grpc-web chunked", "application/grpc-web+proto", envelope(size), true, slack + 256<<10, http.StatusOK, "8", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			read.Store(0)
			// A raw connection, so the client keeps sending while it reads the answer and a
			// refusal is seen even when the gateway closes the connection mid-body.
			conn, err := net.Dial("tcp", lis.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST " + login + " HTTP/1.1\r\nHost: gateway\r\nContent-Type: " + tt.contentType + "\r\n"
			if strings.HasPrefix(tt.contentType, "application/json") || strings.HasPrefix(tt.contentType, "application/proto") {
				head += "Connect-Protocol-Version: 1\r\n"
			}
			if tt.chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += "Content-Length: " + strconv.Itoa(len(tt.prefix)+size) + "\r\n\r\n"
			}
			go func() {
				if _, err := io.WriteString(conn, head); err != nil {
					return
				}
				if !tt.chunked {
					// The size is announced: send only the envelope's prefix, if any; the
					// gateway must answer without the message.
					_, _ = conn.Write(tt.prefix)
					return
				}
				w := httputil.NewChunkedWriter(conn)
				if _, err := io.Copy(w, io.MultiReader(bytes.NewReader(tt.prefix), &zeros{n: size})); err == nil {
					_ = w.Close()
					_, _ = io.WriteString(conn, "\r\n")
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			grpcStatus := resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
			if resp.StatusCode != tt.wantStatus || grpcStatus != tt.wantGRPC || !strings.Contains(string(b), tt.wantBody) {
				t.Errorf("got %d grpc-status %q %q", resp.StatusCode, grpcStatus, b)
			}
			if n := read.Load(); n > int64(tt.maxRead) {
				t.Errorf("the gateway read %d bytes of a %d-byte body (bound %d)", n, size, tt.maxRead)
			}
		})
	}

	t.Run("grpc", func(t *testing.T) {
		read.Store(0)
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Invoke(context.Background(), login, wrapperspb.Bytes(make([]byte, size)), new(wrapperspb.BytesValue))
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("got %v", err)
		}
		if n := read.Load(); n > slack {
			t.Errorf("the gateway read %d bytes of a %d-byte message", n, size)
		}
	})
	if n := called.Load(); n != 0 {
		t.Errorf("%d oversized messages were received", n)
	}

	// A message just under the limit still reaches the handler, with or without a length.
	msg, err := proto.Marshal(wrapperspb.Bytes(make([]byte, limit-16)))
	if err != nil || len(msg) > limit {
		t.Fatalf("%d bytes: %v", len(msg), err)
	}
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(msg)
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+lis.Addr().String()+login, body)
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Connect-Protocol-Version", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "test backend") {
			t.Errorf("chunked=%v: %d %s", chunked, resp.StatusCode, b)
		}
	}
	if n := called.Load(); n != 2 {
		t.Errorf("%d of 2 messages at the limit were received", n)
	}
}
