package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// startVagrantServer builds and runs the real vagrant-server on its own schema, checking Plinth
// tokens with the suite's auth and following its revocations on the suite's NATS.
func (s *suite) startVagrantServer(t *testing.T) string {
	t.Helper()
	bin := testenv.Binary(t, "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-server")
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", p[0])
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+testenv.DB(t).URL, "PLINTH_NATS_URL="+s.natsURL,
		"PLINTH_GRPC_ADDR="+addr, "PLINTH_ADMIN_ADDR=off", "PLINTH_AUTH_ADDR="+s.authAddr)
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	return addr
}

// vagrantCall carries what a Vagrant client sends: the protocol range and its raw token.
func vagrantCall(ctx context.Context, token string) context.Context {
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// TestVagrantStreamsThroughTheGatewayEndWithTheirUser is issue #36's "open streams outlive
// revocation" for vagrant-server behind the gateway (its Vagrant API is routed with the
// server's own tokens, so the server ends the stream and the gateway passes its status on): a
// viewer's GetLogStream and GetJobStream on a session token got through the gateway end
// Unauthenticated within a second of the admin disabling the viewer.
func TestVagrantStreamsThroughTheGatewayEndWithTheirUser(t *testing.T) {
	s := newSuite(t)
	g := s.gateway(t, app.Options{}, "PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER="+s.startVagrantServer(t))
	ctx := ctxT(t)
	v := vagrantpb.NewVagrantClient(g.conn)
	var boot string
	for {
		resp, err := v.BootstrapToken(vagrantCall(ctx, ""), &emptypb.Empty{})
		if err == nil {
			boot = resp.GetToken()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("bootstrap through the gateway: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // vagrant-server is starting
	}
	if _, err := v.UpsertBasis(vagrantCall(ctx, boot), &vagrantpb.UpsertBasisRequest{Basis: &vagrantpb.Basis{Name: "dev", Path: "/dev"}}); err != nil {
		t.Fatal(err)
	}
	job, err := v.QueueJob(vagrantCall(ctx, boot), &vagrantpb.QueueJobRequest{Job: &vagrantpb.Job{
		TargetRunner: &vagrantpb.Ref_Runner{Target: &vagrantpb.Ref_Runner_Any{Any: &vagrantpb.Ref_RunnerAny{}}},
		Operation:    &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}},
	}, ExpiresIn: "10m"})
	if err != nil {
		t.Fatal(err)
	}

	root := bearer(ctx, login(t, g.conn))
	users := adminpb.NewAdminServiceClient(g.conn)
	if _, err := users.CreateUser(root, &adminpb.CreateUserRequest{Username: "vera", Password: "vera-password", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	plinth, err := authpb.NewAuthServiceClient(g.conn).Login(ctx, &authpb.LoginRequest{Username: "vera", Password: "vera-password"})
	if err != nil {
		t.Fatal(err)
	}
	session, err := vagrantv1.NewSessionTokenServiceClient(g.conn).IssueSessionToken(bearer(ctx, plinth.GetToken()), &vagrantv1.IssueSessionTokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(vagrantCall(ctx, session.GetToken()))
	defer cancel()
	logs, err := v.GetLogStream(sctx, &vagrantpb.GetLogStreamRequest{Scope: &vagrantpb.GetLogStreamRequest_Basis{Basis: &sdk.Ref_Basis{Name: "dev"}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := v.GetJobStream(sctx, &vagrantpb.GetJobStreamRequest{JobId: job.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // open, then the job's state: the stream is live
		if _, err := jobs.Recv(); err != nil {
			t.Fatalf("the viewer's job stream: %v", err)
		}
	}
	logsEnd, jobsEnd := make(chan error, 1), make(chan error, 1)
	go func() {
		for {
			if _, err := logs.Recv(); err != nil {
				logsEnd <- err
				return
			}
		}
	}()
	go func() {
		for {
			if _, err := jobs.Recv(); err != nil {
				jobsEnd <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the log stream (which has nothing to send yet) is open
	if _, err := users.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "vera", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	disabled := time.Now()
	for name, end := range map[string]chan error{"GetLogStream": logsEnd, "GetJobStream": jobsEnd} {
		select {
		case err := <-end:
			if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != authn.MsgTokenEnded {
				t.Fatalf("%s through the gateway ended with %v, want Unauthenticated %q", name, err, authn.MsgTokenEnded)
			}
			if d := time.Since(disabled); d > time.Second {
				t.Fatalf("%s ended %v after the disable, want within 1s", name, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s through the gateway still open 10s after the disable", name)
		}
	}
}
