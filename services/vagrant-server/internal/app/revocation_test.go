package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// realAuth is the auth binary, run on its own schema and the env's NATS: its users, its
// tokens and the token.revoked events it publishes when an admin disables a user, changes a
// role or revokes tokens.
type realAuth struct {
	addr  string
	conn  *grpc.ClientConn
	admin context.Context // calls carrying the admin's Plinth token
}

const realAuthAdminPassword = "vagrant-admin-pw-7c1f"

// startRealAuth builds and runs services/auth/cmd/auth until the test ends; vagrant-servers
// the env starts afterwards check Plinth tokens with it.
func (e *env) startRealAuth(t *testing.T) *realAuth {
	t.Helper()
	bin := testenv.Binary(t, "github.com/plinth-dev/plinth/services/auth/cmd/auth")
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", p[0])
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+testenv.DB(t).URL, "PLINTH_NATS_URL="+e.natsURL,
		"PLINTH_GRPC_ADDR="+addr, "PLINTH_ADMIN_ADDR=off", "PLINTH_LOG_FORMAT=json",
		"PLINTH_ADMIN_PASSWORD="+realAuthAdminPassword, "PLINTH_AUTH_ARGON2_MEMORY_KIB=8192", "PLINTH_AUTH_ARGON2_ITERATIONS=1")
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		select {
		case <-done:
			t.Fatalf("auth exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("auth not serving after 60s: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.authAddr = addr
	a := &realAuth{addr: addr, conn: conn}
	a.admin = plinthCall(t, a.login(t, "admin", realAuthAdminPassword))
	return a
}

// login signs username in and returns the Plinth token.
func (a *realAuth) login(t *testing.T, username, password string) string {
	t.Helper()
	resp, err := authpb.NewAuthServiceClient(a.conn).Login(context.Background(), &authpb.LoginRequest{Username: username, Password: password})
	if err != nil {
		t.Fatalf("login %s: %v", username, err)
	}
	return resp.GetToken()
}

// user creates username with role and signs them in.
func (a *realAuth) user(t *testing.T, username, role string) string {
	t.Helper()
	if _, err := adminpb.NewAdminServiceClient(a.conn).CreateUser(a.admin, &adminpb.CreateUserRequest{
		Username: username, Password: username + "-password", Role: role}); err != nil {
		t.Fatal(err)
	}
	return a.login(t, username, username+"-password")
}

// endedWithin waits for end (a stream's final error) and requires Unauthenticated with
// authn's message, within d of since.
func endedWithin(t *testing.T, what string, end <-chan error, since time.Time, d time.Duration) {
	t.Helper()
	select {
	case err := <-end:
		if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != authn.MsgTokenEnded {
			t.Fatalf("%s ended with %v, want Unauthenticated %q", what, err, authn.MsgTokenEnded)
		}
		if took := time.Since(since); took > d {
			t.Fatalf("%s ended %v after the change, want within %v", what, took, d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still open 10s after the change", what)
	}
}

// TestSessionStreamsEndWithTheirUser is issue #36's "open streams outlive revocation" on
// vagrant-server's own port, against the real auth: a viewer's GetLogStream and an operator's
// runner (RunnerConfig and a RunnerJobStream waiting for work), all on session tokens, end
// Unauthenticated within a second of the admin disabling the viewer, changing the operator's
// role, revoking a third user's tokens; a job queued afterwards for the operator's runner
// reaches no stream of theirs.
func TestSessionStreamsEndWithTheirUser(t *testing.T) {
	t.Parallel()
	e, auth, c, st, ctx, vm := loggedTarget(t)

	session := func(username, role string) string {
		return e.issue(t, st, auth.user(t, username, role)).GetToken()
	}
	vera, otto, rita := session("vera", "viewer"), session("otto", "operator"), session("rita", "viewer")
	users := adminpb.NewAdminServiceClient(auth.conn)

	// Disabled: the viewer's log stream ends.
	logs := openLogStream(t, c, vera, &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}})
	logs.take(t, 1)
	if _, err := users.SetUserDisabled(auth.admin, &adminpb.SetUserDisabledRequest{Username: "vera", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	endedWithin(t, "a disabled viewer's GetLogStream", logs.end, time.Now(), time.Second)

	// Tokens revoked: a log stream ends.
	logs = openLogStream(t, c, rita, &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}})
	logs.take(t, 1)
	if _, err := users.RevokeUserTokens(auth.admin, &adminpb.RevokeUserTokensRequest{Username: "rita"}); err != nil {
		t.Fatal(err)
	}
	endedWithin(t, "a GetLogStream whose tokens an admin revoked", logs.end, time.Now(), time.Second)

	// Role changed: the operator's runner streams end, and a job queued for the runner
	// afterwards reaches none of them.
	runner := startRunner(t, c, otto, "otto-runner", true)
	first := queue(t, c, ctx, &vagrant.Job{TargetRunner: runnerRef("otto-runner"), Operation: noopJob().GetOperation()})
	js := runner.take(t, 10*time.Second)
	if js.job.GetId() != first {
		t.Fatalf("the operator's runner took %s, want %s", js.job.GetId(), first)
	}
	js.ack()
	js.complete(nil)
	waiting := runner.request(t)
	time.Sleep(300 * time.Millisecond) // the request reaches the queue's wait
	if _, err := users.SetUserRole(auth.admin, &adminpb.SetUserRoleRequest{Username: "otto", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	endedWithin(t, "the runner's RunnerJobStream after its user's role changed", waiting.end, changed, time.Second)
	endedWithin(t, "the runner's RunnerConfig after its user's role changed", runner.ended, changed, time.Second)
	queue(t, c, ctx, &vagrant.Job{TargetRunner: runnerRef("otto-runner"), Operation: noopJob().GetOperation()})
	select {
	case m, ok := <-waiting.msgs:
		if ok {
			t.Fatalf("the ended stream received %v", m)
		}
	case <-time.After(500 * time.Millisecond):
	}
	// And the runner cannot come back with its session token.
	again, err := c.RunnerJobStream(callCtx(otto))
	if err == nil {
		_ = again.Send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{
			Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: "otto-runner"}}})
		_, err = again.Recv()
	}
	code(t, "a new RunnerJobStream on the revoked session", err, codes.Unauthenticated)
}

// TestOwnedLoginTokensEndWithTheirUser: a login token an admin's session made belongs to that
// admin — a token that never expires, so it must not outlive the user's access. When the admin
// is disabled, the token's open log stream and runner end Unauthenticated within a second and
// the token is refused from then on, also after the user is enabled again; another admin's
// token keeps working.
func TestOwnedLoginTokensEndWithTheirUser(t *testing.T) {
	t.Parallel()
	e, auth, c, st, _, vm := loggedTarget(t)

	owned := func(username string) string {
		session := e.issue(t, st, auth.user(t, username, "admin")).GetToken()
		return e.secret(must(c.GenerateLoginToken(withRole(t, session, "operator"), &emptypb.Empty{}))(t).GetToken())
	}
	ada, bob := owned("ada"), owned("bob")
	logs := openLogStream(t, c, ada, &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}})
	logs.take(t, 1)
	runner := startRunner(t, c, ada, "ada-runner", true)

	users := adminpb.NewAdminServiceClient(auth.conn)
	if _, err := users.SetUserDisabled(auth.admin, &adminpb.SetUserDisabledRequest{Username: "ada", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	disabled := time.Now()
	endedWithin(t, "a disabled admin's login token's GetLogStream", logs.end, disabled, time.Second)
	endedWithin(t, "a disabled admin's login token's RunnerConfig", runner.ended, disabled, time.Second)
	waitRefused(t, c, ada, "after its owner was disabled")
	if _, err := users.SetUserDisabled(auth.admin, &adminpb.SetUserDisabledRequest{Username: "ada", Disabled: false}); err != nil {
		t.Fatal(err)
	}
	_, err := c.ListBasis(call(t, ada), &emptypb.Empty{})
	code(t, "the token after its owner was enabled again", err, codes.Unauthenticated)
	must(c.ListBasis(call(t, bob), &emptypb.Empty{}))(t)
}

// loggedTarget is the revocation tests' start: the real auth, vagrant-server taking session
// tokens, a bootstrapped admin token's call context, and a target whose log holds one
// line ("before", from a job a runner ran and ended), so a log stream shows it is open.
func loggedTarget(t *testing.T) (*env, *realAuth, vagrant.VagrantClient, vagrantv1.SessionTokenServiceClient, context.Context, *sdk.Ref_Target) {
	t.Helper()
	e := newEnv(t)
	auth := e.startRealAuth(t)
	c, st := e.serveSessions(t)
	boot := e.bootstrap(t, c)
	ctx := call(t, boot)
	_, _, vm := registryFixture(t, c, ctx)
	r := startRunner(t, c, boot, "runner-1", false)
	queue(t, c, ctx, targetJob(vm))
	s := r.take(t, 10*time.Second)
	s.ack()
	s.output("before")
	s.complete(nil)
	r.stop()
	return e, auth, c, st, ctx, vm
}
