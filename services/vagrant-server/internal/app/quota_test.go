package app_test

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// Issue #36 found "100 jobs queued in 33 s; a viewer can mint any number of session
// tokens". These tests are what an attacker with one account would try, with small limits.

// TestSessionTokenQuota: a viewer signed in twice mints session tokens until the limit
// (live tokens per owner, PLINTH_VAGRANT_MAX_TOKENS_PER_USER), then gets ResourceExhausted
// naming it, and no token; another user is not affected; a revoked session frees its
// places; issues racing for the last places never take more than there are; an admin's
// login and invite tokens count with their session tokens.
func TestSessionTokenQuota(t *testing.T) {
	t.Parallel()
	e, js := sessionEnv(t, "PLINTH_VAGRANT_MAX_TOKENS_PER_USER=5")
	c, st := e.serveSessions(t)
	e.bootstrap(t, c) // session tokens are signed with the key it makes
	expires := time.Now().Add(time.Hour)
	const first, second = "plt_vera-first-sign-in-3c9d", "plt_vera-second-sign-in-81fe"
	for _, tok := range []string{first, second} {
		e.addToken(tok, authn.Account{ID: "viewer-1", Name: "vera", Role: authz.Viewer, Expires: expires})
	}
	refused := func(what, plinth string) {
		t.Helper()
		_, err := st.IssueSessionToken(plinthCall(t, plinth), &vagrantv1.IssueSessionTokenRequest{})
		code(t, what, err, codes.ResourceExhausted, "vera", "5 live", "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
	}
	var fromFirst []string
	for range 3 {
		fromFirst = append(fromFirst, e.issue(t, st, first).GetToken())
	}
	e.issue(t, st, second)
	e.issue(t, st, second)
	refused("the 6th session token", first)
	refused("the 6th session token, other sign-in", second)
	e.issue(t, st, plinthToken) // otto's quota is his own

	revoke(t, js, first) // vera signs out of the first sign-in: its three places are free
	waitRefused(t, c, fromFirst[0], "after its Plinth token was revoked")
	// Calls on the session end as the event arrives, before the replica records the
	// revocation: the places are free once it has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := st.IssueSessionToken(plinthCall(t, second), &vagrantv1.IssueSessionTokenRequest{})
		if err == nil {
			e.secret(r.GetToken())
			break
		}
		code(t, "a session token while the revocation is recorded", err, codes.ResourceExhausted, "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
		if time.Now().After(deadline) {
			t.Fatal("the revoked session's places are still taken 10s after its revocation")
		}
	}
	e.issue(t, st, second)
	e.issue(t, st, second)
	refused("the session token after the freed places were taken", second)

	// Five places, twelve issues at once: five tokens, seven refusals.
	const walt = "plt_walt-sign-in-52aa"
	e.addToken(walt, authn.Account{ID: "viewer-2", Name: "walt", Role: authz.Viewer, Expires: expires})
	ok := racing(t, 12, func() error {
		r, err := st.IssueSessionToken(plinthCall(t, walt), &vagrantv1.IssueSessionTokenRequest{})
		if err == nil {
			e.secret(r.GetToken())
		}
		return err
	}, "walt", "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
	if ok != 5 {
		t.Fatalf("%d racing issues got a token; 5 places were free", ok)
	}

	// An admin's session makes login and invite tokens she owns: they count with her
	// session tokens.
	const ada = "plt_ada-sign-in-90b1"
	e.addToken(ada, authn.Account{ID: "admin-1", Name: "ada", Role: authz.Admin, Expires: expires})
	session := e.issue(t, st, ada).GetToken()
	must(c.GenerateLoginToken(call(t, session), &emptypb.Empty{}))(t)
	must(c.GenerateInviteToken(call(t, session), &vagrant.InviteTokenRequest{Duration: "1h"}))(t)
	e.issue(t, st, ada)
	e.issue(t, st, ada)
	_, err := c.GenerateLoginToken(call(t, session), &emptypb.Empty{})
	code(t, "the admin's 6th token, a login token", err, codes.ResourceExhausted, "5 live", "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
	_, err = c.GenerateInviteToken(call(t, session), &vagrant.InviteTokenRequest{Duration: "1h"})
	code(t, "the admin's 6th token, an invite", err, codes.ResourceExhausted, "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
	_, err = st.IssueSessionToken(plinthCall(t, ada), &vagrantv1.IssueSessionTokenRequest{})
	code(t, "the admin's 6th token, a session token", err, codes.ResourceExhausted, "PLINTH_VAGRANT_MAX_TOKENS_PER_USER")
}

// TestQueuedJobQuota: an operator's token queues jobs until its owner holds the limit of
// unfinished ones (PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER), then gets ResourceExhausted
// naming it and nothing is queued — also through a second token of the same owner; another
// owner is not affected; assigned and running jobs count, finished (completed, canceled)
// ones do not; queueing racing for the last places never takes more than there are.
func TestQueuedJobQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER=3")
	c, st := e.serveSessions(t)
	boot := e.bootstrap(t, c)
	operator := e.secret(must(c.GenerateLoginToken(withRole(t, boot, "operator"), &emptypb.Empty{}))(t).GetToken())
	again := e.secret(must(c.GenerateLoginToken(withRole(t, boot, "operator"), &emptypb.Empty{}))(t).GetToken())
	refused := func(what, token string) {
		t.Helper()
		_, err := c.QueueJob(call(t, token), &vagrant.QueueJobRequest{Job: noopJob()})
		code(t, what, err, codes.ResourceExhausted, "3 unfinished jobs", "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER")
	}
	ctx := call(t, operator)
	var ids []string
	for range 3 {
		ids = append(ids, queue(t, c, ctx, noopJob()))
	}
	refused("the 4th job", operator)
	refused("the 4th job, through another token of the same owner", again)
	if n := len(must(c.XListJobs(call(t, boot), &vagrant.ListJobsRequest{}))(t).GetJobs()); n != 3 {
		t.Fatalf("%d jobs stored, want the 3 admitted", n)
	}
	otto := e.issue(t, st, plinthToken).GetToken() // a Plinth user's session: his own quota
	queue(t, c, call(t, otto), noopJob())

	// A canceled job is finished: its place is free.
	must(c.CancelJob(ctx, &vagrant.CancelJobRequest{JobId: ids[0]}))(t)
	waitJob(t, c, ctx, ids[0], vagrant.Job_ERROR, 10*time.Second)
	ids = append(ids[1:], queue(t, c, ctx, noopJob()))
	refused("the job after the canceled one's place was taken", operator)

	// A running job still counts; once it completes its place is free. The runner takes
	// the oldest queued job, the operator's.
	r := startRunner(t, c, boot, "quota-runner", false)
	s := r.take(t, 10*time.Second)
	s.ack()
	waitJob(t, c, ctx, s.job.GetId(), vagrant.Job_RUNNING, 10*time.Second)
	refused("a job while one runs", operator)
	s.complete(nil)
	queue(t, c, ctx, noopJob())
	refused("the job after the completed one's place was taken", operator)

	// Two places free (the runner is gone), eight jobs at once: two queued, six refused.
	r.stop()
	for _, id := range ids[len(ids)-2:] {
		must(c.CancelJob(ctx, &vagrant.CancelJobRequest{JobId: id}))(t)
		waitJob(t, c, ctx, id, vagrant.Job_ERROR, 10*time.Second)
	}
	ok := racing(t, 8, func() error {
		_, err := c.QueueJob(call(t, operator), &vagrant.QueueJobRequest{Job: noopJob()})
		return err
	}, "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER")
	if ok != 2 {
		t.Fatalf("%d racing jobs were queued; 2 places were free", ok)
	}
}

// racing runs do n times at once and returns how many succeeded; every failure must be a
// ResourceExhausted whose message holds each of wantIn.
func racing(t *testing.T, n int, do func() error, wantIn ...string) int {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- do() })
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a racing call: %v, want success or ResourceExhausted", err)
		}
		code(t, "a racing call", err, codes.ResourceExhausted, wantIn...)
	}
	return ok
}
