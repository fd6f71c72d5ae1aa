package e2e

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// journeyBrowser: what a browser sends — gRPC-Web, and Connect in its binary and JSON
// encodings, over HTTP/1.1 — goes through the gateway with the same token rule as gRPC.
func (s *journeySuite) journeyBrowser(t *testing.T) {
	token := s.login(t)
	// A browser speaks HTTP/1.1 (or h2 over TLS); http.Client over http:// is HTTP/1.1.
	hc := &http.Client{Timeout: callTimeout}
	base := "http://" + s.endpoints.Gateway

	protocols := []struct {
		name string
		opts []connect.ClientOption
	}{
		{"gRPC-Web", []connect.ClientOption{connect.WithGRPCWeb()}},
		{"Connect", nil},
		{"Connect+JSON", []connect.ClientOption{connect.WithProtoJSON()}},
	}
	// What connect-web's gRPC-Web transport sends with a token, from the console's origin.
	t.Run("CORSPreflight", func(t *testing.T) {
		s.checkPreflightAllows(t, "/cnct.kaas.api.Cluster/GetVersionInformation",
			"authorization", "content-type", "x-grpc-web", "x-user-agent", "grpc-timeout")
		s.checkPreflightAllows(t, "/services.auth.AuthService/CheckToken",
			"authorization", "content-type", "connect-protocol-version", "connect-timeout-ms")
	})
	for _, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			check := connect.NewClient[authpb.CheckTokenRequest, authpb.CheckTokenResponse](hc,
				base+"/services.auth.AuthService/CheckToken", proto.opts...)
			resp, err := check.CallUnary(callCtx(t), connect.NewRequest(&authpb.CheckTokenRequest{Token: token}))
			if err != nil || !resp.Msg.GetSuccess() {
				t.Errorf("public CheckToken: %v, %v; want success", resp, err)
			}

			version := connect.NewClient[kaaspb.GetVersionMsg, kaaspb.GetVersionReply](hc,
				base+"/cnct.kaas.api.Cluster/GetVersionInformation", proto.opts...)
			req := connect.NewRequest(&kaaspb.GetVersionMsg{})
			req.Header().Set("Authorization", "Bearer "+token)
			v, err := version.CallUnary(callCtx(t), req)
			if err != nil {
				t.Errorf("kaas GetVersionInformation with a token: %v", err)
			} else if !v.Msg.GetOk() || v.Msg.GetVersionInformation().GetGoVersion() == "" {
				t.Errorf("kaas GetVersionInformation answered %v, want ok with the Go version", v.Msg)
			}

			_, err = version.CallUnary(callCtx(t), connect.NewRequest(&kaaspb.GetVersionMsg{}))
			if code := connect.CodeOf(err); code != connect.CodeUnauthenticated {
				t.Errorf("kaas GetVersionInformation without a token: %v (code %s), want unauthenticated", err, code)
			}
			var cerr *connect.Error
			if errors.As(err, &cerr) && cerr.Message() == "" {
				t.Errorf("the refusal carries no message: %v", cerr)
			}
		})
	}
}

// corsPreflight asks, as a browser on another origin does before a call, whether the call's
// headers may be sent; it returns what the gateway allows, or fails.
func (s *journeySuite) corsPreflight(t *testing.T, path string, headers []string) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(callCtx(t), http.MethodOptions, "http://"+s.endpoints.Gateway+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "http://console.example")
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	req.Header.Set("Access-Control-Request-Headers", strings.Join(headers, ","))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("preflight %s: %v", path, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("preflight %s: %s, allow-origin %q", path, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	var allowed []string
	for _, h := range strings.Split(resp.Header.Get("Access-Control-Allow-Headers"), ",") {
		allowed = append(allowed, strings.ToLower(strings.TrimSpace(h)))
	}
	return allowed
}

// checkPreflightAllows fails unless the preflight for path allows every header.
func (s *journeySuite) checkPreflightAllows(t *testing.T, path string, headers ...string) {
	t.Helper()
	allowed := s.corsPreflight(t, path, headers)
	for _, h := range headers {
		if !slices.Contains(allowed, h) {
			t.Errorf("a browser may not send %q to %s: the gateway's preflight allows only %v", h, path, allowed)
		}
	}
}
