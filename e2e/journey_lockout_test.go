package e2e

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// journeyLockout: someone guesses a password through the gateway. After auth's limit of
// failures the login is refused with ResourceExhausted, and what tells a client how long to
// wait — the RetryInfo detail and the retry-after header — arrives through the gateway, over
// gRPC and over Connect.
func (s *journeySuite) journeyLockout(t *testing.T) {
	user := "intruder-" + randomHex(t, 3)
	auth := authpb.NewAuthServiceClient(s.gw)
	var (
		err             error
		header, trailer metadata.MD
	)
	for i := 0; i < 10; i++ {
		header, trailer = nil, nil
		_, err = auth.Login(callCtx(t), &authpb.LoginRequest{Username: user, Password: "wrong-password"},
			grpc.Header(&header), grpc.Trailer(&trailer))
		if status.Code(err) != codes.Unauthenticated {
			break
		}
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Login after repeated failures: %v, want ResourceExhausted", err)
	}
	var retry *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry.GetRetryDelay().AsDuration() <= 0 {
		t.Errorf("the refusal through the gateway carries no RetryInfo detail: %v", status.Convert(err).Details())
	}
	after := append(header.Get("retry-after"), trailer.Get("retry-after")...)
	if len(after) == 0 {
		t.Errorf("the refusal through the gateway carries no retry-after (header %v, trailer %v)", header, trailer)
	} else if secs, err := strconv.Atoi(after[0]); err != nil || secs <= 0 {
		t.Errorf("retry-after %q, want seconds", after[0])
	}

	// The console's view of the same refusal (Connect): code and detail.
	login := connect.NewClient[authpb.LoginRequest, authpb.LoginResponse](&http.Client{Timeout: callTimeout},
		"http://"+s.endpoints.Gateway+"/services.auth.AuthService/Login")
	_, err = login.CallUnary(callCtx(t), connect.NewRequest(&authpb.LoginRequest{Username: user, Password: "wrong-password"}))
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeResourceExhausted {
		t.Fatalf("Connect Login of a locked user: %v, want resource_exhausted", err)
	}
	found := false
	for _, d := range cerr.Details() {
		if v, err := d.Value(); err == nil {
			if r, ok := v.(*errdetails.RetryInfo); ok && r.GetRetryDelay().AsDuration() > 0 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the Connect refusal carries no RetryInfo detail: %v", cerr.Details())
	}
	if cerr.Meta().Get("Retry-After") == "" {
		t.Errorf("the Connect refusal carries no retry-after header: %v", cerr.Meta())
	}
}
