package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// sessionEnv is an env on a private NATS server, where the test plays auth's stream: the
// revocation consumer reads the fixed stream PLINTH_AUTH, which a shared server's other users
// (other tests, a suite) would also publish to.
func sessionEnv(t *testing.T, settings ...string) (*env, jetstream.JetStream) {
	t.Helper()
	e := newEnv(t, settings...)
	e.natsURL = testenv.NATSServer(t, 0, t.TempDir()).ClientURL()
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := events.StreamOf(&eventsv1.TokenRevoked{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := events.EnsureStream(ctx, js, s.Name, s.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	return e, js
}

// serveSessions runs one vagrant-server and returns clients of the Vagrant API and of the
// session-token service.
func (e *env) serveSessions(t *testing.T) (vagrant.VagrantClient, vagrantv1.SessionTokenServiceClient) {
	t.Helper()
	addr, _ := e.serve(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return vagrant.NewVagrantClient(conn), vagrantv1.NewSessionTokenServiceClient(conn)
}

// revoke publishes auth's token.revoked for plinth as auth's outbox relay does.
func revoke(t *testing.T, js jetstream.JetStream, plinth string) {
	t.Helper()
	data, err := proto.Marshal(&eventsv1.TokenRevoked{TokenId: authn.TokenID(plinth), UserId: "account-1",
		Reason: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_LOGOUT})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.Must(uuid.NewV7()).String()
	msg := nats.NewMsg(events.SubjectOf(&eventsv1.TokenRevoked{}))
	msg.Data = data
	msg.Header.Set(events.HeaderSpecVersion, events.SpecVersion)
	msg.Header.Set(events.HeaderID, id)
	msg.Header.Set(events.HeaderSource, "plinth/auth")
	msg.Header.Set(events.HeaderTime, time.Now().UTC().Format(time.RFC3339Nano))
	msg.Header.Set(events.HeaderContentType, events.ContentTypeProtobuf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// issue asks for a session token with the Plinth token plinth.
func (e *env) issue(t *testing.T, st vagrantv1.SessionTokenServiceClient, plinth string) *vagrantv1.IssueSessionTokenResponse {
	t.Helper()
	r, err := st.IssueSessionToken(plinthCall(t, plinth), &vagrantv1.IssueSessionTokenRequest{})
	if err != nil {
		t.Fatalf("IssueSessionToken: %v", err)
	}
	e.secret(r.GetToken())
	return r
}

// waitRefused polls ListBasis with token until it is refused with Unauthenticated.
func waitRefused(t *testing.T, c vagrant.VagrantClient, token, after string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.ListBasis(call(t, token), &emptypb.Empty{})
		if err != nil {
			code(t, "ListBasis "+after, err, codes.Unauthenticated)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session token is still accepted 10s %s", after)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Plinth token gets a Vagrant token that the Vagrant API accepts — the job queue included,
// for an operator — until auth revokes the Plinth token (sign-out); from then on the Vagrant
// token is refused, and none is issued for that Plinth token any more. No token reaches the
// log (env's check at cleanup).
func TestSessionTokenWorksUntilSignOut(t *testing.T) {
	t.Parallel()
	e, js := sessionEnv(t)
	c, st := e.serveSessions(t)
	runnerToken := e.bootstrap(t, c)

	r := e.issue(t, st, plinthToken)
	if r.GetRole() != "operator" {
		t.Errorf("role = %q, want operator", r.GetRole())
	}
	if exp := r.GetExpiresAt().AsTime(); exp.Before(time.Now().Add(50*time.Minute)) || exp.After(time.Now().Add(time.Hour)) {
		t.Errorf("expires_at = %v, want the Plinth token's expiry, an hour from now", exp)
	}
	if _, err := c.ListBasis(call(t, r.GetToken()), &emptypb.Empty{}); err != nil {
		t.Fatalf("ListBasis with the session token: %v", err)
	}
	if _, err := c.QueueJob(call(t, r.GetToken()), &vagrant.QueueJobRequest{Job: &vagrant.Job{
		TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
		Operation:    &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}},
	}, ExpiresIn: "1m"}); err != nil {
		t.Fatalf("QueueJob with an operator's session token: %v", err)
	}
	// Credentials that outlive the session are user administration.
	_, err := c.GenerateLoginToken(call(t, r.GetToken()), &emptypb.Empty{})
	code(t, "GenerateLoginToken with an operator's session token", err, codes.PermissionDenied, "user administration")
	second := e.issue(t, st, plinthToken)

	revoke(t, js, plinthToken)
	waitRefused(t, c, r.GetToken(), "after sign-out")
	_, err = c.ListBasis(call(t, second.GetToken()), &emptypb.Empty{})
	code(t, "a second session token of the same Plinth token after sign-out", err, codes.Unauthenticated)
	// The fake auth still accepts the Plinth token (as a cache might, for a moment): the
	// recorded revocation refuses it anyway.
	_, err = st.IssueSessionToken(plinthCall(t, plinthToken), &vagrantv1.IssueSessionTokenRequest{})
	code(t, "IssueSessionToken after sign-out", err, codes.Unauthenticated, "sign in again")
	// Upstream's own tokens are not sessions: the runner's keeps working.
	if _, err := c.ListBasis(call(t, runnerToken), &emptypb.Empty{}); err != nil {
		t.Fatalf("ListBasis with the bootstrap token after a sign-out: %v", err)
	}
}

// Only a Plinth token gets a session token: none, a bad one and a Vagrant token are
// Unauthenticated; an auth that names no expiry gets FailedPrecondition (the token could
// outlive the session); a server not bootstrapped has no key to sign with.
func TestSessionTokenNeedsAPlinthToken(t *testing.T) {
	t.Parallel()
	e, _ := sessionEnv(t)
	c, st := e.serveSessions(t)
	_, err := st.IssueSessionToken(plinthCall(t, plinthToken), &vagrantv1.IssueSessionTokenRequest{})
	code(t, "IssueSessionToken before BootstrapToken", err, codes.FailedPrecondition, "not bootstrapped")
	runnerToken := e.bootstrap(t, c)
	for name, token := range map[string]string{"no token": "", "an unknown token": "plt_nobody", "a Vagrant token": runnerToken} {
		_, err := st.IssueSessionToken(plinthCall(t, token), &vagrantv1.IssueSessionTokenRequest{})
		code(t, "IssueSessionToken with "+name, err, codes.Unauthenticated)
	}
	e.addToken("plt_no-expiry", authn.Account{ID: "account-3", Name: "old", Role: authz.Operator})
	_, err = st.IssueSessionToken(plinthCall(t, "plt_no-expiry"), &vagrantv1.IssueSessionTokenRequest{})
	code(t, "IssueSessionToken when auth names no expiry", err, codes.FailedPrecondition, "when your session ends")
	// A Plinth token is still no Vagrant token.
	_, err = c.ListBasis(call(t, plinthToken), &emptypb.Empty{})
	code(t, "ListBasis with the Plinth token", err, codes.Unauthenticated)
}

// A viewer's session token reads and cannot write; every session token expires with its
// Plinth token, or sooner (PLINTH_VAGRANT_SESSION_TOKEN_TTL).
func TestSessionTokenCarriesRoleAndExpiry(t *testing.T) {
	t.Parallel()
	e, _ := sessionEnv(t, "PLINTH_VAGRANT_SESSION_TOKEN_TTL=3s")
	c, st := e.serveSessions(t)
	e.bootstrap(t, c)
	plinthExpiry := time.Now().Add(1500 * time.Millisecond)
	e.addToken("plt_viewer", authn.Account{ID: "account-2", Name: "vera", Role: authz.Viewer, Expires: plinthExpiry})

	viewer := e.issue(t, st, "plt_viewer")
	if !viewer.GetExpiresAt().AsTime().Equal(plinthExpiry.Truncate(time.Microsecond)) {
		t.Errorf("expires_at = %v, want the Plinth token's %v", viewer.GetExpiresAt().AsTime(), plinthExpiry)
	}
	if _, err := c.XListJobs(call(t, viewer.GetToken()), &vagrant.ListJobsRequest{}); err != nil {
		t.Fatalf("_ListJobs with a viewer's session token: %v", err)
	}
	_, err := c.UpsertBasis(call(t, viewer.GetToken()), &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "b", Path: "/b"}})
	code(t, "UpsertBasis with a viewer's session token", err, codes.PermissionDenied, "role viewer may not call /hashicorp.vagrant.Vagrant/UpsertBasis")

	capped := e.issue(t, st, plinthToken)
	if left := time.Until(capped.GetExpiresAt().AsTime()); left > 3*time.Second || left < time.Second {
		t.Errorf("an hour's Plinth token got a session token for %v, want the 3s cap", left)
	}
	waitRefused(t, c, viewer.GetToken(), "after the Plinth token expired")
	waitRefused(t, c, capped.GetToken(), "after its own lifetime")
}
