package app_test

import (
	"testing"

	"github.com/oklog/ulid/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func TestProjectRPCs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))
	dev := must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "dev", Path: "/dev"}}))(t).GetBasis()
	ci := must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "ci", Path: "/ci"}}))(t).GetBasis()

	// The basis may be referred to by name.
	web := must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{
		Name: "web", Path: "/src/web", Basis: &sdk.Ref_Basis{Name: "dev"}}}))(t).GetProject()
	if web.GetBasis().GetResourceId() != dev.ResourceId || web.GetBasis().GetName() != "dev" {
		t.Fatalf("project's basis: %v", web.GetBasis())
	}
	must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{
		Name: "web", Path: "/src/web", Basis: &sdk.Ref_Basis{ResourceId: ci.ResourceId}}}))(t) // same name, other basis
	found := must(c.FindProject(ctx, &vagrant.FindProjectRequest{Project: &vagrant.Project{
		Name: "web", Basis: &sdk.Ref_Basis{Path: "/dev"}}}))(t).GetProject()
	if found.ResourceId != web.ResourceId {
		t.Fatalf("found %v, want the dev project", found)
	}
	basis := must(c.GetBasis(ctx, &vagrant.GetBasisRequest{Basis: &sdk.Ref_Basis{ResourceId: dev.ResourceId}}))(t).GetBasis()
	if len(basis.Projects) != 1 || basis.Projects[0].ResourceId != web.ResourceId {
		t.Fatalf("basis lists %v", basis.Projects)
	}

	before := must(c.ListProjects(ctx, &emptypb.Empty{}))(t)
	bad := []struct {
		name string
		p    *vagrant.Project
		code codes.Code
		msg  string
	}{
		{"no basis", &vagrant.Project{Name: "api", Path: "/api"}, codes.InvalidArgument, "project.basis"},
		{"unknown basis", &vagrant.Project{Name: "api", Path: "/api", Basis: &sdk.Ref_Basis{Name: "prod"}}, codes.FailedPrecondition, "project.basis"},
		{"no name", &vagrant.Project{Path: "/api", Basis: &sdk.Ref_Basis{Name: "dev"}}, codes.InvalidArgument, "project.name"},
		{"taken name", &vagrant.Project{Name: "web", Path: "/other", Basis: &sdk.Ref_Basis{Name: "dev"}}, codes.FailedPrecondition, "project.name"},
		{"move", &vagrant.Project{ResourceId: web.ResourceId, Basis: &sdk.Ref_Basis{Name: "ci"}}, codes.FailedPrecondition, "another basis"},
	}
	for _, b := range bad {
		_, err := c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: b.p})
		code(t, b.name, err, b.code, b.msg)
	}
	_, err := c.FindProject(ctx, &vagrant.FindProjectRequest{Project: &vagrant.Project{Name: "web"}})
	code(t, "find without basis", err, codes.InvalidArgument, "project.basis")
	_, err = c.GetProject(ctx, &vagrant.GetProjectRequest{Project: &sdk.Ref_Project{ResourceId: ulid.Make().String()}})
	code(t, "get unknown", err, codes.NotFound)
	if after := must(c.ListProjects(ctx, &emptypb.Empty{}))(t); !proto.Equal(before, after) || len(after.Projects) != 2 {
		t.Fatalf("refused requests changed the registry: %v → %v", before, after)
	}
}
