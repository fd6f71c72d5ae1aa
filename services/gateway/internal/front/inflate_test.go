package front

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	_ "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant" // GetJobStream's descriptor
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

const (
	login = "/services.auth.AuthService/Login"
	// jobStream is a server-streaming method anyone may call through the gateway (its
	// backend checks the token), for Connect streaming and gRPC-Web, which vanguard
	// refuses for a unary method over HTTP/1.1.
	jobStream = "/hashicorp.vagrant.Vagrant/GetJobStream"
)

// loginPort serves the gateway's port on 127.0.0.1 in front of a gRPC server whose every
// method is a Login backend: it records the usernames of the requests that reach it and
// answers Unimplemented (after every message of the request). o are the port's options (a second's grace when unset). Vagrant's GetJobStream (an Own route: the gateway asks no token)
// is served too: its request's field 1 is a string, as Login's is. It returns the port's address and the recorded names.
func loginPort(t testing.TB, o ServeOptions) (string, *names) {
	t.Helper()
	got := &names{}
	const maxMessageBytes = 16 << 20 // PLINTH_GATEWAY_MAX_MESSAGE_BYTES's default
	gs := grpc.NewServer(append(ServerOptions(maxMessageBytes, 0), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		for {
			req := new(authpb.LoginRequest)
			err := ss.RecvMsg(req)
			if errors.Is(err, io.EOF) {
				return status.Error(codes.Unimplemented, "test backend")
			}
			if err != nil {
				return err
			}
			got.add(req.GetUsername())
		}
	}))...)
	h, err := New(Options{GRPC: gs, Services: []string{"services.auth.AuthService", "hashicorp.vagrant.Vagrant"}, CORSOrigins: []string{"*"}, MaxMessageBytes: maxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o.Grace = cmp.Or(o.Grace, time.Second)
	go func() { done <- Serve(ctx, lis, h, gs, o) }()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String(), got
}

// names are what reached a test backend.
type names struct {
	mu   sync.Mutex
	list []string
}

func (n *names) add(s string) { n.mu.Lock(); n.list = append(n.list, s); n.mu.Unlock() }

func (n *names) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.list
	n.list = nil
	return l
}

// bomb is gzip of a message whose field 1 (Login's username, GetJobStream's job id) is size
// bytes of 'a', in JSON when jsonName names the field, else in protobuf. It is built of gzip
// members (a gzip stream may hold several, and every reader here reads them all), the
// megabytes of 'a' from one member compressed once: building a 64 MiB bomb costs little
// (compressing 64 MiB took minutes under the race detector).
func bomb(t testing.TB, size int, jsonName string) []byte {
	t.Helper()
	var head, tail []byte
	if jsonName != "" {
		head, tail = []byte(`{"`+jsonName+`":"`), []byte(`"}`)
	} else {
		head = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), uint64(size))
	}
	out := gzipped(t, head)
	for n := size; n > 0; n -= bombChunk {
		if n >= bombChunk {
			out = append(out, megabyteOfA(t)...)
		} else {
			out = append(out, gzipped(t, bytes.Repeat([]byte{'a'}, n))...)
		}
	}
	return append(out, gzipped(t, tail)...)
}

const bombChunk = 1 << 20

// megabyteOfA is bombChunk bytes of 'a' as one gzip member, compressed once.
var megabyteOfA = func() func(testing.TB) []byte {
	var once sync.Once
	var b []byte
	return func(t testing.TB) []byte {
		once.Do(func() { b = gzipped(t, bytes.Repeat([]byte{'a'}, bombChunk)) })
		return b
	}
}()

// gzipped is data as one gzip member.
func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// enveloped is msg in a gRPC-Web / Connect streaming envelope, its compressed flag set.
func enveloped(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = 1
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// compressedCall is one request of a protocol with a gzip message.
type compressedCall struct {
	name, path, contentType, encoding string
	jsonName                          string // "" for protobuf
	envelope                          bool
}

var compressedCalls = []compressedCall{
	{"connect unary json", login, "application/json", "Content-Encoding", "username", false},
	{"connect unary proto", login, "application/proto", "Content-Encoding", "", false},
	{"connect streaming json", jobStream, "application/connect+json", "Connect-Content-Encoding", "jobId", true},
	{"connect streaming proto", jobStream, "application/connect+proto", "Connect-Content-Encoding", "", true},
	{"grpc-web", login, "application/grpc-web+proto", "Grpc-Encoding", "", true},
	{"grpc-web streaming", jobStream, "application/grpc-web+proto", "Grpc-Encoding", "", true},
}

// post sends body to c.path over a new HTTP/1.1 connection to addr and returns the answer:
// HTTP status, grpc-status (gRPC-Web) and body.
func (c compressedCall) post(t testing.TB, addr string, body []byte) (int, string, string) {
	t.Helper()
	if c.envelope {
		body = enveloped(body)
	}
	return c.postRaw(t, addr, body)
}

// postRaw is post with a body already in envelopes.
func (c compressedCall) postRaw(t testing.TB, addr string, body []byte) (int, string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST " + c.path + " HTTP/1.1\r\nHost: gateway\r\nContent-Type: " + c.contentType +
		"\r\n" + c.encoding + ": gzip\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	go func() { _, _ = conn.Write(append([]byte(head), body...)) }()
	// Not `within`: a message just under the limit is inflated, transcoded and relayed whole,
	// which under -race on a loaded machine took longer than 15 s; a minute still catches a
	// gateway that never answers.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", c.name, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status"), string(b)
}

// TestCompressedBombRefused is the unauthenticated gzip bomb of issue #36: a 64 KiB gzip
// body that inflates to 64 MiB, sent to the public Login in every protocol of the HTTP/1.1
// side. Each is refused ResourceExhausted without reaching the backend, and the gateway
// allocates a small fraction of what the bomb inflates to (before: Connect unary inflated
// it whole, 1 GB of RSS for a 256 MiB bomb). A compressed message under the limit still
// reaches the backend, inflated; one that is not gzip is InvalidArgument.
func TestCompressedBombRefused(t *testing.T) {
	addr, got := loginPort(t, ServeOptions{})
	const size = 64 << 20
	limit := routes.MaxRequestBytes(routes.Auth)
	for _, c := range compressedCalls {
		t.Run(c.name, func(t *testing.T) {
			body := bomb(t, size, c.jsonName)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			code, grpcStatus, answer := c.post(t, addr, body)
			runtime.ReadMemStats(&after)
			if !refusedExhausted(code, grpcStatus, answer) {
				t.Errorf("%d bytes of gzip inflating to %d: %d grpc-status %q %q; want resource_exhausted", len(body), size, code, grpcStatus, answer)
			}
			// The test's client and server share the process: this counts both, and the
			// client allocates little (its body is built above).
			if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
				t.Errorf("the gateway allocated %d bytes for a %d-byte bomb (limit %d)", n, len(body), limit)
			}
			if l := got.take(); len(l) != 0 {
				t.Errorf("the bomb reached the backend (%d messages)", len(l))
			}

			// Just under the limit, the message reaches the backend whole.
			code, grpcStatus, answer = c.post(t, addr, bomb(t, limit-64, c.jsonName))
			if !strings.Contains(answer, "test backend") && grpcStatus != "12" {
				t.Errorf("a message under the limit: %d grpc-status %q %q", code, grpcStatus, answer)
			}
			if l := got.take(); len(l) != 1 || len(l[0]) != limit-64 || strings.Trim(l[0], "a") != "" {
				t.Errorf("the backend got %d messages, want one username of %d bytes", len(l), limit-64)
			}

			if c.envelope && c.path == jobStream {
				// A later message of the body (no routed method takes two over HTTP/1.1,
				// but a client may send them): inflated as it is read, to the same limit.
				body := append(enveloped(bomb(t, 10, c.jsonName)), enveloped(bomb(t, size, c.jsonName))...)
				code, grpcStatus, answer = c.postRaw(t, addr, body)
				if !refusedExhausted(code, grpcStatus, answer) {
					t.Errorf("a bomb after a small message: %d grpc-status %q %q; want resource_exhausted", code, grpcStatus, answer)
				}
				if l := got.take(); len(l) != 1 || len(l[0]) != 10 {
					t.Errorf("the backend got %d messages, want the first only", len(l))
				}
			}

			code, grpcStatus, answer = c.post(t, addr, []byte("not gzip at all"))
			if !(code == http.StatusBadRequest || strings.Contains(answer, "invalid_argument") || grpcStatus == "3") {
				t.Errorf("a body that is not gzip: %d grpc-status %q %q; want invalid_argument", code, grpcStatus, answer)
			}
		})
	}
}

// refusedExhausted reports an answer that is ResourceExhausted in its protocol: Connect
// unary's 429, a Connect end-stream message's code, gRPC-Web's grpc-status 8.
func refusedExhausted(code int, grpcStatus, body string) bool {
	return code == http.StatusTooManyRequests || grpcStatus == "8" || strings.Contains(body, `"resource_exhausted"`)
}

// BenchmarkCompressedBomb measures what a 64 MiB gzip bomb costs the gateway in each protocol:
// run with -benchmem; B/op is the bytes the process allocated for one refusal, cpu-ms/op the
// CPU time the process spent on it (client included, both: its request is built before the
// timer starts, and it only writes 64 KiB and reads the answer), ns/op its time on loopback.
func BenchmarkCompressedBomb(b *testing.B) {
	addr, _ := loginPort(b, ServeOptions{})
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, c := range compressedCalls {
		b.Run(c.name, func(b *testing.B) {
			body := bomb(b, 64<<20, c.jsonName)
			b.ReportAllocs()
			b.ResetTimer()
			start := cpu()
			for range b.N {
				if code, grpcStatus, answer := c.post(b, addr, body); !refusedExhausted(code, grpcStatus, answer) {
					b.Fatalf("%d %s", code, answer)
				}
			}
			b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
