package app_test

import (
	"testing"

	"github.com/oklog/ulid/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func TestTargetRPCs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))
	must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "dev", Path: "/dev"}}))(t)
	pref := &sdk.Ref_Project{Name: "web", Basis: &sdk.Ref_Basis{Name: "dev"}}
	web := must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "web", Path: "/web", Basis: pref.Basis}}))(t).GetProject()
	other := must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "api", Path: "/api", Basis: pref.Basis}}))(t).GetProject()

	// A record of a type this server does not know (the Ruby side packs many) survives.
	record := &anypb.Any{TypeUrl: "type.googleapis.com/hashicorp.vagrant.sdk.Args.Symbol", Value: []byte{0x0a, 0x02, 'u', 'p'}}
	upsert := func(req *vagrant.UpsertTargetRequest) (*vagrant.Target, error) {
		resp, err := c.UpsertTarget(ctx, req)
		return resp.GetTarget(), err
	}
	// The project may come from the request instead of the target (upstream reads only the target's).
	host := must(upsert(&vagrant.UpsertTargetRequest{Project: pref, Target: &vagrant.Target{
		Name: "host", Uuid: "c0ffee00-1111", Record: record, State: vagrant.Operation_PENDING}}))(t)
	if host.GetProject().GetResourceId() != web.ResourceId || !proto.Equal(host.Record, record) {
		t.Fatalf("created target: %v", host)
	}
	// Without an id, the same project and name is the same target: an upsert, not a duplicate.
	again := must(upsert(&vagrant.UpsertTargetRequest{Target: &vagrant.Target{
		Name: "host", Project: pref, State: vagrant.Operation_CREATED, Provider: "netns"}}))(t)
	if again.ResourceId != host.ResourceId || again.State != vagrant.Operation_CREATED || again.Uuid != "c0ffee00-1111" ||
		string(again.Record.GetValue()) != string(record.Value) {
		t.Fatalf("natural-key upsert: %v", again)
	}
	guest := must(upsert(&vagrant.UpsertTargetRequest{Target: &vagrant.Target{
		Name: "guest", Project: pref, Uuid: "c0ffee99-2222", Parent: &sdk.Ref_Target{Name: "host"}}}))(t)
	if guest.GetParent().GetResourceId() != host.ResourceId {
		t.Fatalf("parent by name: %v", guest.GetParent())
	}
	got := must(c.GetTarget(ctx, &vagrant.GetTargetRequest{Target: &sdk.Ref_Target{ResourceId: host.ResourceId}}))(t).GetTarget()
	if len(got.Subtargets) != 1 || got.Subtargets[0].ResourceId != guest.ResourceId {
		t.Fatalf("subtargets: %v", got.Subtargets)
	}
	for _, q := range []*vagrant.Target{{Uuid: "c0ffee9"}, {Name: "guest", Project: pref}, {ResourceId: guest.ResourceId}} {
		if f := must(c.FindTarget(ctx, &vagrant.FindTargetRequest{Target: q}))(t).GetTarget(); f.GetResourceId() != guest.ResourceId {
			t.Fatalf("FindTarget(%v) = %v", q, f)
		}
	}
	_, err := c.FindTarget(ctx, &vagrant.FindTargetRequest{Target: &vagrant.Target{Uuid: "c0ffee"}})
	code(t, "ambiguous uuid prefix", err, codes.FailedPrecondition, "target.uuid")
	_, err = c.FindTarget(ctx, &vagrant.FindTargetRequest{Target: &vagrant.Target{Uuid: "dead"}})
	code(t, "unknown uuid", err, codes.NotFound)

	elsewhere := must(upsert(&vagrant.UpsertTargetRequest{Target: &vagrant.Target{
		Name: "elsewhere", Project: &sdk.Ref_Project{ResourceId: other.ResourceId}}}))(t)
	before := must(c.ListTargets(ctx, &emptypb.Empty{}))(t)
	bad := []struct {
		name string
		req  *vagrant.UpsertTargetRequest
		code codes.Code
		msg  string
	}{
		{"no target", &vagrant.UpsertTargetRequest{}, codes.InvalidArgument, "target: required"},
		{"no project", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "x"}}, codes.InvalidArgument, "target.project"},
		{"no name", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Project: pref}}, codes.InvalidArgument, "target.name"},
		{"unknown project", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "x", Project: &sdk.Ref_Project{ResourceId: ulid.Make().String()}}}, codes.FailedPrecondition, "target.project"},
		{"unknown state", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "x", Project: pref, State: 42}}, codes.InvalidArgument, "target.state"},
		{"taken uuid", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "x", Project: pref, Uuid: "c0ffee00-1111"}}, codes.FailedPrecondition, "target.uuid"},
		{"unknown parent", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "x", Project: pref, Parent: &sdk.Ref_Target{Name: "nope"}}}, codes.FailedPrecondition, "target.parent"},
		{"parent in another project", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{ResourceId: host.ResourceId, Parent: &sdk.Ref_Target{ResourceId: elsewhere.ResourceId}}}, codes.FailedPrecondition, "same project"},
		{"cycle", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{ResourceId: host.ResourceId, Parent: &sdk.Ref_Target{ResourceId: guest.ResourceId}}}, codes.FailedPrecondition, "own ancestor"},
		{"move", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{ResourceId: host.ResourceId, Project: &sdk.Ref_Project{ResourceId: other.ResourceId}}}, codes.FailedPrecondition, "another project"},
		{"unknown id", &vagrant.UpsertTargetRequest{Target: &vagrant.Target{ResourceId: ulid.Make().String(), Name: "x"}}, codes.NotFound, "target"},
	}
	for _, b := range bad {
		_, err := c.UpsertTarget(ctx, b.req)
		code(t, b.name, err, b.code, b.msg)
	}
	if after := must(c.ListTargets(ctx, &emptypb.Empty{}))(t); !proto.Equal(before, after) || len(after.Targets) != 3 {
		t.Fatalf("refused requests changed the registry: %v → %v", before, after)
	}

	_, err = c.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{})
	code(t, "delete without a reference", err, codes.InvalidArgument)
	must(c.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{Project: pref, Target: &sdk.Ref_Target{Name: "guest"}}))(t)
	must(c.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{Target: &sdk.Ref_Target{ResourceId: guest.ResourceId}}))(t) // already gone
	must(c.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{Target: &sdk.Ref_Target{ResourceId: host.ResourceId}}))(t)
	must(c.DeleteTarget(ctx, &vagrant.DeleteTargetRequest{Target: &sdk.Ref_Target{ResourceId: elsewhere.ResourceId}}))(t)
	if left := must(c.ListTargets(ctx, &emptypb.Empty{}))(t); len(left.Targets) != 0 {
		t.Fatalf("after deletes: %v", left)
	}
}
