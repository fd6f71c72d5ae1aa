package e2e

import (
	"errors"
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

// journeyLockout: someone guesses admin's password through the gateway from one address.
// After auth's limit of failures that (username, address) pair is refused with
// ResourceExhausted — even the right password — and what tells a client how long to wait (the
// RetryInfo detail and the retry-after header) arrives through the gateway, over gRPC and over
// Connect. The guesses cannot be turned against admin: a login from another address works, and
// a session admin already holds stays valid.
func (s *journeySuite) journeyLockout(t *testing.T) {
	// Addresses of their own (loopback aliases: the gateway names a client's TCP address to
	// auth), so the other journeys' logins from 127.0.0.1 are not throttled by this one.
	guesser, elsewhere := loopbackAddr(2, 120), loopbackAddr(130, 250)
	clients := map[string]authpb.AuthServiceClient{
		guesser:   authpb.NewAuthServiceClient(gatewayFrom(t, s.endpoints.Gateway, guesser)),
		elsewhere: authpb.NewAuthServiceClient(gatewayFrom(t, s.endpoints.Gateway, elsewhere)),
	}
	auth := func(addr string) authpb.AuthServiceClient { return clients[addr] }
	session, err := auth(elsewhere).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password})
	if err != nil {
		t.Fatalf("admin's login before the guesses: %v", err)
	}
	var header, trailer metadata.MD
	for i := 0; i < 10; i++ {
		header, trailer = nil, nil
		_, err = auth(guesser).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: "wrong-password"},
			grpc.Header(&header), grpc.Trailer(&trailer))
		if status.Code(err) != codes.Unauthenticated {
			break
		}
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Login after repeated failures: %v, want ResourceExhausted", err)
	}
	if _, err := auth(guesser).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the right password from the throttled %s: %v, want ResourceExhausted", guesser, err)
	}
	if _, err := auth(elsewhere).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password}); err != nil {
		t.Errorf("wrong passwords from %s locked admin out at %s: %v", guesser, elsewhere, err)
	}
	if ok, err := auth(elsewhere).CheckToken(withToken(callCtx(t), session.GetToken()), &authpb.CheckTokenRequest{Token: session.GetToken()}); err != nil || !ok.GetSuccess() {
		t.Errorf("admin's session after the guesses: %v %v", ok, err)
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
	login := connect.NewClient[authpb.LoginRequest, authpb.LoginResponse](httpFrom(guesser),
		"http://"+s.endpoints.Gateway+"/services.auth.AuthService/Login")
	req := connect.NewRequest(&authpb.LoginRequest{Username: "admin", Password: "wrong-password"})
	_, err = login.CallUnary(callCtx(t), req)
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeResourceExhausted {
		t.Fatalf("Connect Login from a throttled address: %v, want resource_exhausted", err)
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
