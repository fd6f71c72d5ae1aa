package app_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
	"github.com/plinth-dev/plinth/services/gateway/internal/front"
)

// TestGatewayTransportLimits is issue #36's unauthenticated attacker against the whole
// gateway (real auth behind it) on 127.0.0.1: headers of 16–32 KiB, a gzip bomb, a truncated
// gRPC-Web body and Connect without its protocol header to the public Login. Each is
// answered in the client's protocol with the code its mistake calls for, and the gateway
// logs nothing at ERROR (before: Internal, with an ERROR line each, for the headers and the
// truncated body; the bomb took 400 MB; Connect without the header was a bare 404).
func TestGatewayTransportLimits(t *testing.T) {
	s := newSuite(t)
	g := s.gateway(t, app.Options{})
	const login = "/services.auth.AuthService/Login"
	post := func(t *testing.T, contentType string, header http.Header, body []byte) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, "http://"+g.addr+login, bytes.NewReader(body))
		req.Header = header
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status"), string(b)
	}
	pad := func(n int) http.Header { return http.Header{"X-Pad": {strings.Repeat("a", n)}} }

	t.Run("headers of 16-32 KiB", func(t *testing.T) {
		for _, n := range []int{front.MaxHeaderListBytes, 16 << 10, 20 << 10, 31 << 10} {
			code, grpcStatus, body := post(t, "application/json", pad(n), []byte(`{}`))
			if code != http.StatusTooManyRequests || !strings.Contains(body, `"resource_exhausted"`) {
				t.Errorf("Connect, %d bytes of header: %d %s; want 429 resource_exhausted", n, code, body)
			}
			if _, grpcStatus, _ = post(t, "application/grpc-web+proto", pad(n), []byte{0, 0, 0, 0, 0}); grpcStatus != "8" {
				t.Errorf("gRPC-Web, %d bytes of header: grpc-status %q; want 8", n, grpcStatus)
			}
		}
		// Over front.MaxHeaderBytes (net/http reads 4 KiB more before it refuses).
		if code, _, _ := post(t, "application/json", pad(40<<10), []byte(`{}`)); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("40 KiB of header: %d; want 431", code)
		}
		// Under the limit, the call reaches auth, which judges the request.
		if code, _, body := post(t, "application/json", pad(12<<10), []byte(`{}`)); !strings.Contains(body, "username") {
			t.Errorf("12 KiB of header: %d %s; want auth's answer", code, body)
		}
		// gRPC clients learn the gateway's limit from its settings, below the backends'.
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-pad", strings.Repeat("a", front.MaxHeaderListBytes))
		_, err := authpb.NewAuthServiceClient(g.conn).Login(ctx, &authpb.LoginRequest{})
		if !strings.Contains(status.Convert(err).Message(), strconv.Itoa(front.MaxHeaderListBytes)) {
			t.Errorf("gRPC with %d bytes of metadata: %v; want refused by the client at the gateway's limit", front.MaxHeaderListBytes, err)
		}
	})

	t.Run("gzip bomb", func(t *testing.T) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = io.WriteString(zw, `{"username":"`)
		chunk := bytes.Repeat([]byte{'a'}, 1<<20)
		for range 64 {
			_, _ = zw.Write(chunk)
		}
		_, _ = io.WriteString(zw, `"}`)
		_ = zw.Close()
		code, _, body := post(t, "application/json", http.Header{"Content-Encoding": {"gzip"}}, buf.Bytes())
		if code != http.StatusTooManyRequests || !strings.Contains(body, `"resource_exhausted"`) {
			t.Errorf("%d bytes inflating to 64 MiB: %d %s; want 429 resource_exhausted", buf.Len(), code, body)
		}
	})

	t.Run("truncated gRPC-Web body", func(t *testing.T) {
		if _, grpcStatus, _ := post(t, "application/grpc-web+proto", http.Header{}, []byte{0, 0, 0, 0, 9, 1}); grpcStatus != "3" {
			t.Errorf("grpc-status %q; want 3 (InvalidArgument)", grpcStatus)
		}
	})

	t.Run("Connect without its protocol header", func(t *testing.T) {
		code, _, body := post(t, "application/json", http.Header{}, []byte(`{"username":"admin","password":"`+adminPassword+`"}`))
		if code != http.StatusOK || !strings.Contains(body, "token") {
			t.Errorf("%d %s; want auth's Login answer", code, body)
		}
	})

	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			t.Errorf("logged at ERROR: %s", l)
		}
	}
}
