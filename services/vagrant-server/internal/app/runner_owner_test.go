package app_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// registerErr opens RunnerConfig for id with token and returns how the registration ended.
func registerErr(t *testing.T, c vagrant.VagrantClient, token, id string) error {
	t.Helper()
	stream, err := c.RunnerConfig(callCtx(token))
	if err != nil {
		return err
	}
	defer func() { _ = stream.CloseSend() }()
	if err := stream.Send(&vagrant.RunnerConfigRequest{Event: &vagrant.RunnerConfigRequest_Open_{Open: &vagrant.RunnerConfigRequest_Open{
		Runner: &vagrant.Runner{Id: id, ByIdOnly: true}}}}); err != nil && !errors.Is(err, io.EOF) {
		return err // io.EOF: the server ended the stream (a refusal); Recv says with what status
	}
	_, err = stream.Recv()
	return err
}

// requestErr opens RunnerJobStream for id with token and returns its first answer's error.
func requestErr(t *testing.T, c vagrant.VagrantClient, token, id string) error {
	t.Helper()
	stream, err := c.RunnerJobStream(callCtx(token))
	if err != nil {
		return err
	}
	if err := stream.Send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{
		Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: id}}}); err != nil && !errors.Is(err, io.EOF) {
		return err // io.EOF: the server ended the stream (a refusal); Recv says with what status
	}
	m, err := stream.Recv()
	if err == nil {
		t.Fatalf("runner %s's stream with another token got %v", id, m)
	}
	return err
}

// TestRunnerIDBelongsToItsFirstRegistrant is issue #36's "runner ids are not bound to their
// registrant": another login token — and another Plinth user's session token — registering an
// id someone registered, or asking for its jobs, is refused with PermissionDenied and gets no
// job; the job goes to the runner that owns the id. The same credential registers again (a
// runner reconnecting), and so does the same user with a new session token.
func TestRunnerIDBelongsToItsFirstRegistrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	auth := e.startRealAuth(t)
	c, st := e.serveSessions(t)
	boot := e.bootstrap(t, c)
	ctx := call(t, boot)
	other := e.secret(must(c.GenerateLoginToken(ctx, &emptypb.Empty{}))(t).GetToken())

	owner := startRunner(t, c, boot, "kaas-reserved", true)
	code(t, "another token registering the id", registerErr(t, c, other, "kaas-reserved"), codes.PermissionDenied, "registered it first")
	job := queue(t, c, ctx, &vagrant.Job{TargetRunner: runnerRef("kaas-reserved"), Operation: noopJob().GetOperation()})
	code(t, "another token asking for the id's jobs", requestErr(t, c, other, "kaas-reserved"), codes.PermissionDenied, "registered it first")
	s := owner.take(t, 10*time.Second)
	if s.job.GetId() != job {
		t.Fatalf("the owner took %s, want %s", s.job.GetId(), job)
	}
	s.ack()
	s.complete(nil)
	owner.stop()
	// The owner registers again; the id is still online for it, not for the other token.
	startRunner(t, c, boot, "kaas-reserved", true)
	code(t, "another token while the owner is back", registerErr(t, c, other, "kaas-reserved"), codes.PermissionDenied)

	// Session tokens: the id belongs to the Plinth user, across their session tokens.
	oscar, olga := auth.user(t, "oscar", "operator"), auth.user(t, "olga", "operator")
	first := e.issue(t, st, oscar).GetToken()
	startRunner(t, c, first, "oscar-runner", true).stop()
	second := e.issue(t, st, auth.login(t, "oscar", "oscar-password")).GetToken()
	startRunner(t, c, second, "oscar-runner", true)
	intruder := e.issue(t, st, olga).GetToken()
	code(t, "another user's session token registering the id", registerErr(t, c, intruder, "oscar-runner"), codes.PermissionDenied)
	code(t, "another user's session token asking for its jobs", requestErr(t, c, intruder, "oscar-runner"), codes.PermissionDenied)
	code(t, "a runner id nobody registered", requestErr(t, c, intruder, "nobody's"), codes.NotFound)
}
