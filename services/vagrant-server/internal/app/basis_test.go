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

func TestBasisRPCs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))

	created := must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{
		Name: "dev", Path: "/home/dev/.vagrant.d", Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"a": "1"}},
	}}))(t).GetBasis()
	if _, err := ulid.ParseStrict(created.GetResourceId()); err != nil {
		t.Fatalf("resource_id %q is not a ULID: %v", created.GetResourceId(), err)
	}
	// An upsert with the id changes the fields given and keeps the others.
	updated := must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{
		ResourceId: created.ResourceId, RemoteEnabled: true,
	}}))(t).GetBasis()
	if updated.Name != "dev" || !updated.RemoteEnabled || updated.Metadata.GetMetadata()["a"] != "1" {
		t.Fatalf("partial upsert lost fields: %v", updated)
	}
	got := must(c.GetBasis(ctx, &vagrant.GetBasisRequest{Basis: &sdk.Ref_Basis{ResourceId: created.ResourceId}}))(t).GetBasis()
	if !proto.Equal(got, updated) {
		t.Fatalf("get %v, want %v", got, updated)
	}
	for _, q := range []*vagrant.Basis{{Name: "dev"}, {Path: "/home/dev/.vagrant.d"}, {ResourceId: created.ResourceId},
		{ResourceId: ulid.Make().String(), Name: "dev"}} {
		if f := must(c.FindBasis(ctx, &vagrant.FindBasisRequest{Basis: q}))(t).GetBasis(); f.GetResourceId() != created.ResourceId {
			t.Fatalf("FindBasis(%v) = %v", q, f)
		}
	}
	other := must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "ci", Path: "/ci"}}))(t).GetBasis()

	before := must(c.ListBasis(ctx, &emptypb.Empty{}))(t)
	bad := []struct {
		name string
		req  *vagrant.UpsertBasisRequest
		code codes.Code
		msg  string
	}{
		{"no basis", &vagrant.UpsertBasisRequest{}, codes.InvalidArgument, "basis: required"},
		{"no name", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Path: "/x"}}, codes.InvalidArgument, "basis.name"},
		{"no path", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "x"}}, codes.InvalidArgument, "basis.path"},
		{"taken name", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "dev", Path: "/y"}}, codes.FailedPrecondition, "basis.name"},
		{"taken path", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "z", Path: "/ci"}}, codes.FailedPrecondition, "basis.path"},
		{"rename onto a taken name", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{ResourceId: other.ResourceId, Name: "dev"}}, codes.FailedPrecondition, "basis.name"},
		{"unknown id", &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{ResourceId: ulid.Make().String(), Name: "new", Path: "/new"}}, codes.NotFound, "basis"},
	}
	for _, b := range bad {
		_, err := c.UpsertBasis(ctx, b.req)
		code(t, b.name, err, b.code, b.msg)
	}
	_, err := c.GetBasis(ctx, &vagrant.GetBasisRequest{})
	code(t, "get without id", err, codes.InvalidArgument, "basis.resource_id")
	_, err = c.GetBasis(ctx, &vagrant.GetBasisRequest{Basis: &sdk.Ref_Basis{ResourceId: ulid.Make().String()}})
	code(t, "get unknown", err, codes.NotFound)
	_, err = c.FindBasis(ctx, &vagrant.FindBasisRequest{Basis: &vagrant.Basis{Name: "nope"}})
	code(t, "find unknown", err, codes.NotFound)
	_, err = c.FindBasis(ctx, &vagrant.FindBasisRequest{Basis: &vagrant.Basis{}})
	code(t, "find with nothing", err, codes.InvalidArgument)
	after := must(c.ListBasis(ctx, &emptypb.Empty{}))(t)
	if !proto.Equal(before, after) || len(after.Basis) != 2 {
		t.Fatalf("refused requests changed the registry: %v → %v", before, after)
	}
	if got := must(c.GetBasis(ctx, &vagrant.GetBasisRequest{Basis: &sdk.Ref_Basis{ResourceId: other.ResourceId}}))(t).GetBasis(); got.Name != "ci" {
		t.Fatalf("refused rename changed the basis: %v", got)
	}
}
