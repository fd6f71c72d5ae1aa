package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// testWebProtocols calls the gateway as browsers do: Connect (JSON and proto) and gRPC-Web
// over HTTP/1.1, unary and server streaming, with and without a token.
func testWebProtocols(t *testing.T, g *gateway, token string) {
	protocols := map[string][]connect.ClientOption{
		"connect+proto": nil,
		"connect+json":  {connect.WithProtoJSON()},
		"grpc-web":      {connect.WithGRPCWeb()},
	}
	for name, opts := range protocols {
		t.Run(name, func(t *testing.T) {
			free := connect.NewClient[lvmdpb.GetFreeBytesRequest, lvmdpb.GetFreeBytesResponse](
				http.DefaultClient, "http://"+g.addr+"/proto.VGService/GetFreeBytes", opts...)
			_, err := free.CallUnary(ctxT(t), connect.NewRequest(&lvmdpb.GetFreeBytesRequest{}))
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Fatalf("no token: %v", err)
			}
			req := connect.NewRequest(&lvmdpb.GetFreeBytesRequest{})
			req.Header().Set("Authorization", "Bearer "+token)
			resp, err := free.CallUnary(ctxT(t), req)
			if err != nil || resp.Msg.GetFreeBytes() != freeBytes {
				t.Fatalf("with token: %v %v", resp, err)
			}

			watch := connect.NewClient[lvmdpb.Empty, lvmdpb.WatchResponse](
				http.DefaultClient, "http://"+g.addr+"/proto.VGService/Watch", opts...)
			sreq := connect.NewRequest(&lvmdpb.Empty{})
			sreq.Header().Set("Authorization", "Bearer "+token)
			stream, err := watch.CallServerStream(ctxT(t), sreq)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			n := 0
			for stream.Receive() {
				if stream.Msg().GetFreeBytes() != uint64(freeBytes+n) {
					t.Fatalf("message %d: %v", n, stream.Msg())
				}
				n++
			}
			if stream.Err() != nil || n != watchCount {
				t.Fatalf("stream ended after %d messages: %v", n, stream.Err())
			}

			unknown := connect.NewClient[lvmdpb.Empty, lvmdpb.Empty](http.DefaultClient, "http://"+g.addr+"/no.Such/Method", opts...)
			if _, err := unknown.CallUnary(ctxT(t), connect.NewRequest(&lvmdpb.Empty{})); connect.CodeOf(err) != connect.CodeUnimplemented {
				t.Fatalf("unknown method: %v", err)
			}
		})
	}
}

func testCORS(t *testing.T, g *gateway) {
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodOptions, "http://"+g.addr+"/proto.VGService/GetFreeBytes", nil)
	req.Header.Set("Origin", "http://console.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, connect-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-grpc-web") ||
		h.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	// The actual call exposes the gRPC status headers to the page.
	free := connect.NewClient[lvmdpb.GetFreeBytesRequest, lvmdpb.GetFreeBytesResponse](
		http.DefaultClient, "http://"+g.addr+"/proto.VGService/GetFreeBytes", connect.WithGRPCWeb())
	creq := connect.NewRequest(&lvmdpb.GetFreeBytesRequest{})
	creq.Header().Set("Origin", "http://console.example")
	_, err = free.CallUnary(ctxT(t), creq)
	var cerr *connect.Error
	if !errors.As(err, &cerr) || !strings.Contains(cerr.Meta().Get("Access-Control-Expose-Headers"), "grpc-status") {
		t.Fatalf("cross-origin call: %v", err)
	}
}

func testConsoleMount(t *testing.T, s *suite) {
	get := func(g *gateway, path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, "http://"+g.addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	bare := s.gateway(t, app.Options{})
	if code, _ := get(bare, "/"); code != http.StatusNotFound {
		t.Fatalf("no console: GET / = %d", code)
	}
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console at "+r.URL.Path) })
	g := s.gateway(t, app.Options{Console: console})
	if code, body := get(g, "/clusters"); code != http.StatusOK || body != "console at /clusters" {
		t.Fatalf("console: %d %q", code, body)
	}
	// RPCs still reach the route table with a console mounted.
	free := connect.NewClient[lvmdpb.GetFreeBytesRequest, lvmdpb.GetFreeBytesResponse](
		http.DefaultClient, "http://"+g.addr+"/proto.VGService/GetFreeBytes")
	if _, err := free.CallUnary(context.Background(), connect.NewRequest(&lvmdpb.GetFreeBytesRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("RPC with a console mounted: %v", err)
	}
}
