package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
)

// serveWithRunners runs one vagrant-server and returns clients of its Vagrant API and of
// Plinth's RunnerService.
func (e *env) serveWithRunners(t testing.TB) (vagrant.VagrantClient, vagrantv1.RunnerServiceClient) {
	t.Helper()
	addr, _ := e.serve(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return vagrant.NewVagrantClient(conn), vagrantv1.NewRunnerServiceClient(conn)
}

// plinthCall is the metadata of a Plinth client (the console through the gateway): a bearer
// token, no Vagrant protocol header.
func plinthCall(t testing.TB, token string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// listed returns every runner ListRunners answers, by id.
func listed(t testing.TB, rs vagrantv1.RunnerServiceClient) map[string]*vagrantv1.Runner {
	t.Helper()
	resp, err := rs.ListRunners(plinthCall(t, plinthToken), &vagrantv1.ListRunnersRequest{})
	if err != nil {
		t.Fatalf("ListRunners: %v", err)
	}
	out := map[string]*vagrantv1.Runner{}
	for _, r := range resp.GetRunners() {
		out[r.GetId()] = r
	}
	return out
}

// waitRunner polls ListRunners until runner id satisfies ok.
func waitRunner(t testing.TB, rs vagrantv1.RunnerServiceClient, id, what string, ok func(*vagrantv1.Runner) bool) *vagrantv1.Runner {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := listed(t, rs)[id]
		if r != nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner %s: not %s within 10s (listed as %v)", id, what, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A runner connected through RunnerConfig is listed online with its components and the job
// it holds (assigned, then running, then none); one whose stream ended is listed offline.
func TestListRunnersOnlineOfflineAndCurrentJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, rs := e.serveWithRunners(t)
	token := e.bootstrap(t, c)
	if got := listed(t, rs); len(got) != 0 {
		t.Fatalf("a fresh server lists runners %v", got)
	}
	worker := startRunner(t, c, token, "worker", false,
		&vagrant.Component{Type: vagrant.Component_COMMAND, Name: "up"},
		&vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "netns"})
	leaving := startRunner(t, c, token, "leaving", true)

	w := waitRunner(t, rs, "worker", "online", func(r *vagrantv1.Runner) bool { return r.GetOnline() })
	if w.GetByIdOnly() || len(w.GetComponents()) != 2 || w.GetComponents()[0].GetType() != "COMMAND" ||
		w.GetComponents()[0].GetName() != "up" || w.GetComponents()[1].GetType() != "PROVIDER" ||
		w.GetFirstSeen() == nil || w.GetLastSeen() == nil || w.GetCurrentJob() != nil {
		t.Fatalf("worker listed as %v", w)
	}
	l := waitRunner(t, rs, "leaving", "online", func(r *vagrantv1.Runner) bool { return r.GetOnline() })
	if !l.GetByIdOnly() {
		t.Fatalf("leaving listed as %v; it registered by_id_only", l)
	}

	id := queue(t, c, call(t, token), &vagrant.Job{TargetRunner: runnerRef("worker"),
		Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}})
	s := worker.take(t, 10*time.Second)
	held := func(state string) func(*vagrantv1.Runner) bool {
		return func(r *vagrantv1.Runner) bool {
			j := r.GetCurrentJob()
			return j != nil && j.GetId() == id && j.GetState() == state && j.GetOperation() == "noop" && j.GetAssignTime() != nil
		}
	}
	waitRunner(t, rs, "worker", "holding the assigned job", held("WAITING"))
	s.ack()
	waitRunner(t, rs, "worker", "running the job", held("RUNNING"))
	s.complete(&vagrant.Job_Result{})
	waitRunner(t, rs, "worker", "free after the job", func(r *vagrantv1.Runner) bool { return r.GetCurrentJob() == nil && r.GetOnline() })

	before := l.GetLastSeen().AsTime()
	leaving.stop()
	gone := waitRunner(t, rs, "leaving", "offline", func(r *vagrantv1.Runner) bool { return !r.GetOnline() })
	if gone.GetLastSeen().AsTime().Before(before) {
		t.Fatalf("last_seen went back from %v to %v", before, gone.GetLastSeen().AsTime())
	}
	if !listed(t, rs)["worker"].GetOnline() {
		t.Fatal("worker went offline when another runner left")
	}
}

// ListRunners pages by id with page_size (default 100, at most 500: more reads 500) and
// next_page_token, and names the field of a bad page request.
func TestListRunnersPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, rs := e.serveWithRunners(t)
	token := e.bootstrap(t, c)
	for i := range 5 {
		startRunner(t, c, token, fmt.Sprintf("r%d", i), false)
	}
	ctx := plinthCall(t, plinthToken)
	var ids []string
	req := &vagrantv1.ListRunnersRequest{PageSize: 2}
	for pages := 1; ; pages++ {
		resp, err := rs.ListRunners(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetRunners()) > 2 {
			t.Fatalf("page of %d runners; page_size 2", len(resp.GetRunners()))
		}
		for _, r := range resp.GetRunners() {
			ids = append(ids, r.GetId())
		}
		if resp.GetNextPageToken() == "" {
			if pages != 3 {
				t.Fatalf("5 runners in pages of 2 took %d pages", pages)
			}
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if fmt.Sprint(ids) != "[r0 r1 r2 r3 r4]" {
		t.Fatalf("listed %v; want r0…r4 in order, once each", ids)
	}
	if resp, err := rs.ListRunners(ctx, &vagrantv1.ListRunnersRequest{PageSize: 100000}); err != nil || len(resp.GetRunners()) != 5 {
		t.Fatalf("page_size above the maximum: %d runners, %v; want all 5 (the size is capped, not refused)", len(resp.GetRunners()), err)
	}
	for _, bad := range []struct {
		req   *vagrantv1.ListRunnersRequest
		field string
	}{
		{&vagrantv1.ListRunnersRequest{PageSize: -1}, "page_size"},
		{&vagrantv1.ListRunnersRequest{PageToken: "%%%"}, "page_token"},
		{&vagrantv1.ListRunnersRequest{PageToken: string(make([]byte, 300))}, "page_token"},
	} {
		_, err := rs.ListRunners(ctx, bad.req)
		code(t, fmt.Sprintf("ListRunners(%v)", bad.req), err, codes.InvalidArgument, bad.field)
	}
}

// RunnerService takes a Plinth token (checked with auth) and nothing else; the Vagrant API
// keeps its own tokens and refuses a Plinth one.
func TestListRunnersNeedsAPlinthToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, rs := e.serveWithRunners(t)
	vagrantToken := e.bootstrap(t, c)
	for name, ctx := range map[string]context.Context{
		"no token":          plinthCall(t, ""),
		"a wrong token":     plinthCall(t, "plt_not-a-token"),
		"a vagrant token":   plinthCall(t, vagrantToken),
		"a raw vagrant one": metadata.AppendToOutgoingContext(call(t, ""), "authorization", vagrantToken),
	} {
		_, err := rs.ListRunners(ctx, &vagrantv1.ListRunnersRequest{})
		code(t, "ListRunners with "+name, err, codes.Unauthenticated)
	}
	if _, err := rs.ListRunners(plinthCall(t, plinthToken), &vagrantv1.ListRunnersRequest{}); err != nil {
		t.Fatalf("ListRunners with a Plinth token: %v", err)
	}
	_, err := c.ListBasis(call(t, plinthToken), &emptypb.Empty{})
	code(t, "ListBasis with a Plinth token", err, codes.Unauthenticated)

	// auth unreachable: the token may be good, so the caller should retry, not sign in again.
	e.authSrv.Stop()
	_, err = rs.ListRunners(plinthCall(t, plinthToken), &vagrantv1.ListRunnersRequest{})
	code(t, "ListRunners while auth is down", err, codes.Unavailable)
}
