package app_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// withRole is call asking for a token of role (tokens.RoleHeader).
func withRole(t *testing.T, token, role string) context.Context {
	return metadata.AppendToOutgoingContext(call(t, token), tokens.RoleHeader, role)
}

// TestLoginTokensCarryARole is issue #36's "any holder of a Vagrant login/invite token (no
// role at all) is root", on the wire: a login token asked for as a viewer's — directly or
// through an invite — reads but cannot queue jobs, upsert targets, register runners or make
// tokens (PermissionDenied naming the role); an operator's works the queue but makes no
// tokens and cannot ask for an admin's; a role that is none is InvalidArgument naming the
// header. Upstream's clients, asking for no role, keep their maker's (the bootstrap token's:
// an admin's).
func TestLoginTokensCarryARole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	boot := e.bootstrap(t, c)
	ctx := call(t, boot)
	_, _, vm := registryFixture(t, c, ctx)

	viewer := e.secret(must(c.GenerateLoginToken(withRole(t, boot, "viewer"), &emptypb.Empty{}))(t).GetToken())
	invite := e.secret(must(c.GenerateInviteToken(withRole(t, boot, "viewer"), &vagrant.InviteTokenRequest{Duration: "1h"}))(t).GetToken())
	invited := e.secret(must(c.ConvertInviteToken(call(t, ""), &vagrant.ConvertInviteTokenRequest{Token: invite}))(t).GetToken())
	for name, tok := range map[string]string{"a viewer's login token": viewer, "a viewer's converted invite": invited} {
		must(c.ListBasis(call(t, tok), &emptypb.Empty{}))(t)
		must(c.GetTarget(call(t, tok), &vagrant.GetTargetRequest{Target: vm}))(t)
		_, err := c.QueueJob(call(t, tok), &vagrant.QueueJobRequest{Job: targetJob(vm), ExpiresIn: "1m"})
		code(t, name+" queueing a job", err, codes.PermissionDenied, "role viewer may not call /hashicorp.vagrant.Vagrant/QueueJob")
		_, err = c.UpsertTarget(call(t, tok), &vagrant.UpsertTargetRequest{Target: &vagrant.Target{ResourceId: vm.GetResourceId(), Provider: "netns"}})
		code(t, name+" upserting a target", err, codes.PermissionDenied, "role viewer may not call /hashicorp.vagrant.Vagrant/UpsertTarget")
		code(t, name+" registering a runner", registerErr(t, c, tok, "viewer-runner"), codes.PermissionDenied, "role viewer")
		_, err = c.GenerateLoginToken(call(t, tok), &emptypb.Empty{})
		code(t, name+" making a login token", err, codes.PermissionDenied, "role viewer")
	}
	if jobs := must(c.XListJobs(ctx, &vagrant.ListJobsRequest{}))(t).GetJobs(); len(jobs) != 0 {
		t.Fatalf("%d jobs queued by refused calls", len(jobs))
	}

	operator := e.secret(must(c.GenerateLoginToken(withRole(t, boot, "operator"), &emptypb.Empty{}))(t).GetToken())
	must(c.QueueJob(call(t, operator), &vagrant.QueueJobRequest{Job: targetJob(vm), ExpiresIn: "1m"}))(t)
	_, err := c.GenerateLoginToken(withRole(t, operator, "operator"), &emptypb.Empty{})
	code(t, "an operator's token making a token", err, codes.PermissionDenied, "role operator")

	_, err = c.GenerateLoginToken(withRole(t, boot, "root"), &emptypb.Empty{})
	code(t, "an unknown role", err, codes.InvalidArgument, tokens.RoleHeader)
	// No role asked: the maker's (an admin's, which may make tokens).
	plain := e.secret(must(c.GenerateLoginToken(ctx, &emptypb.Empty{}))(t).GetToken())
	must(c.GenerateLoginToken(call(t, plain), &emptypb.Empty{}))(t)
}
