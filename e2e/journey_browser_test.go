package e2e

import (
	"errors"
	"net/http"
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
