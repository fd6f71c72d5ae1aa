package app_test

import (
	"context"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

func TestBootstrapOnlyOnceAcrossReplicasAndRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, stop := e.startStoppable(t)
	_, err := c.ListBasis(call(t, ""), &emptypb.Empty{})
	code(t, "call before bootstrap", err, codes.Unauthenticated, "not supplied")
	boot := e.bootstrap(t, c)
	_, err = c.BootstrapToken(call(t, ""), &emptypb.Empty{})
	code(t, "second bootstrap", err, codes.PermissionDenied, "already bootstrapped")

	// A second replica on the same database: the key is shared, bootstrap stays closed.
	c2 := e.start(t)
	_, err = c2.BootstrapToken(call(t, ""), &emptypb.Empty{})
	code(t, "bootstrap on another instance", err, codes.PermissionDenied)
	must(c2.ListBasis(call(t, boot), &emptypb.Empty{}))(t)

	// A restart keeps the key: the old token still works and bootstrap stays closed.
	stop()
	c3 := e.start(t)
	must(c3.ListBasis(call(t, boot), &emptypb.Empty{}))(t)
	_, err = c3.BootstrapToken(call(t, ""), &emptypb.Empty{})
	code(t, "bootstrap after a restart", err, codes.PermissionDenied)
}

func TestLoginAndInviteTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	boot := e.bootstrap(t, c)

	login := e.secret(must(c.GenerateLoginToken(call(t, boot), &emptypb.Empty{}))(t).GetToken())
	must(c.ListBasis(call(t, login), &emptypb.Empty{}))(t)
	// Vagrant clients send the raw token; "Bearer <token>" works as well.
	md := metadata.Pairs("client-api-protocol", "1,1", "authorization", "Bearer "+login)
	must(c.ListBasis(metadata.NewOutgoingContext(context.Background(), md), &emptypb.Empty{}))(t)

	invite := e.secret(must(c.GenerateInviteToken(call(t, login), &vagrant.InviteTokenRequest{Duration: "1h"}))(t).GetToken())
	_, err := c.ListBasis(call(t, invite), &emptypb.Empty{})
	code(t, "an invite used as a login token", err, codes.Unauthenticated)
	converted := e.secret(must(c.ConvertInviteToken(call(t, ""), &vagrant.ConvertInviteTokenRequest{Token: invite}))(t).GetToken())
	must(c.ListBasis(call(t, converted), &emptypb.Empty{}))(t)
	_, err = c.ConvertInviteToken(call(t, ""), &vagrant.ConvertInviteTokenRequest{Token: login})
	code(t, "converting a login token", err, codes.Unauthenticated)

	short := e.secret(must(c.GenerateInviteToken(call(t, login), &vagrant.InviteTokenRequest{Duration: "50ms"}))(t).GetToken())
	time.Sleep(100 * time.Millisecond)
	_, err = c.ConvertInviteToken(call(t, ""), &vagrant.ConvertInviteTokenRequest{Token: short})
	code(t, "expired invite", err, codes.Unauthenticated, "expired")

	for _, d := range []string{"", "-5m", "soon"} {
		_, err = c.GenerateInviteToken(call(t, login), &vagrant.InviteTokenRequest{Duration: d})
		code(t, "invite duration "+d, err, codes.InvalidArgument, "duration")
	}
	_, err = c.GenerateLoginToken(call(t, ""), &emptypb.Empty{})
	code(t, "generating a login token needs a login token", err, codes.Unauthenticated)
}

func TestForgedTokensAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	boot := e.bootstrap(t, c)

	// Another server's token: right format, its own key.
	otherEnv := newEnv(t)
	foreign := otherEnv.bootstrap(t, otherEnv.start(t))
	// A token signed with a key of our own choosing under the server's key id.
	key := make([]byte, tokens.KeySize)
	if _, err := io.ReadFull(rand.Reader, key); err != nil {
		t.Fatal(err)
	}
	forged, err := tokens.Sign(tokens.DefaultKeyID, key, nil, &vagrant.Token{Login: true, User: tokens.DefaultUser, TokenId: []byte("0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	// The real token with one byte of its signed body, or of its signature, changed.
	tamper := func(field func(*vagrant.TokenTransport) []byte) string {
		tt, err := tokens.Parse(boot)
		if err != nil {
			t.Fatal(err)
		}
		b := field(tt)
		b[len(b)/2] ^= 0x01
		tok, err := tokens.Armour(tt)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tamperedBody := tamper((*vagrant.TokenTransport).GetBody)
	tamperedSig := tamper((*vagrant.TokenTransport).GetSignature)
	for name, tok := range map[string]string{
		"another server's token": foreign, "forged signature": forged,
		"tampered body": tamperedBody, "tampered signature": tamperedSig,
		"garbage": "not-a-token", "truncated": boot[:len(boot)/2],
	} {
		_, err := c.ListBasis(call(t, tok), &emptypb.Empty{})
		code(t, name, err, codes.Unauthenticated, "invalid authentication token")
	}
	must(c.ListBasis(call(t, boot), &emptypb.Empty{}))(t)
}

func TestProtocolHeaderIsRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	boot := e.bootstrap(t, c)
	bg, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// GetVersionInfo needs neither header nor token.
	info := must(c.GetVersionInfo(bg, &emptypb.Empty{}))(t).GetInfo()
	if info.GetApi().GetMinimum() != 1 || info.GetApi().GetCurrent() != 1 || info.GetEntrypoint().GetCurrent() != 1 {
		t.Fatalf("version info %v, want api and entrypoint 1..1", info)
	}
	tokenOnly := metadata.NewOutgoingContext(bg, metadata.Pairs("authorization", boot))
	_, err := c.ListBasis(tokenOnly, &emptypb.Empty{})
	code(t, "no header, valid token", err, codes.InvalidArgument, "client-api-protocol")
	_, err = c.BootstrapToken(bg, &emptypb.Empty{})
	code(t, "bootstrap without header", err, codes.InvalidArgument, "client-api-protocol")
	for header, reason := range map[string]string{"2,3": "client can no longer communicate", "0,0": "client is too outdated", "1": "<min>,<current>"} {
		ctx := metadata.NewOutgoingContext(bg, metadata.Pairs("authorization", boot, "client-api-protocol", header))
		_, err = c.ListBasis(ctx, &emptypb.Empty{})
		code(t, "header "+header, err, codes.InvalidArgument, reason)
	}
	must(c.ListBasis(metadata.NewOutgoingContext(bg, metadata.Pairs("authorization", boot, "client-api-protocol", "1,4")), &emptypb.Empty{}))(t)

	// Streams are guarded as well.
	stream, err := c.RunnerJobStream(tokenOnly)
	if err == nil {
		_, err = stream.Recv()
	}
	code(t, "stream without header", err, codes.InvalidArgument)
	stream, err = c.RunnerJobStream(call(t, ""))
	if err == nil {
		_, err = stream.Recv()
	}
	code(t, "stream without token", err, codes.Unauthenticated)
	stream, err = c.RunnerJobStream(call(t, boot))
	if err == nil {
		err = stream.Send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{
			Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: "never-registered"}}})
	}
	if err == nil {
		_, err = stream.Recv()
	}
	code(t, "stream with token", err, codes.NotFound, "runner not registered")
	_, err = c.QueueJob(call(t, boot), &vagrant.QueueJobRequest{})
	code(t, "QueueJob", err, codes.InvalidArgument, "job: required")
	if strings.Contains(e.logs.String(), boot) {
		t.Fatal("token in the log")
	}
}
