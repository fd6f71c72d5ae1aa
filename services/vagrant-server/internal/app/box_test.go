package app_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func TestBoxRPCs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))
	upsert := func(b *vagrant.Box) (*vagrant.Box, error) {
		resp, err := c.UpsertBox(ctx, &vagrant.UpsertBoxRequest{Box: b})
		return resp.GetBox(), err
	}
	box := func(version, provider string) *vagrant.Box {
		return &vagrant.Box{Name: "ubuntu", Version: version, Provider: provider, Directory: "/boxes/" + version + "/" + provider}
	}
	unversioned := must(upsert(&vagrant.Box{Name: "local", Provider: "netns", Directory: "/boxes/local"}))(t)
	if unversioned.Version != "0.0.0" || time.Since(unversioned.GetLastUpdate().AsTime()) > time.Minute {
		t.Fatalf("defaults: %v", unversioned)
	}
	for _, v := range []string{"1.0.0", "1.2.0", "1.10.0", "2.0.0"} {
		must(upsert(box(v, "netns")))(t)
	}
	must(upsert(box("3.0.0", "libvirt")))(t)
	// Same name, version and provider: the same box, updated.
	first := must(c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu", Version: "1.2.0", Provider: "netns"}}))(t).GetBox()
	again := must(upsert(&vagrant.Box{Name: "ubuntu", Version: "1.2.0", Provider: "netns", MetadataUrl: "https://mirror/ubuntu"}))(t)
	if again.ResourceId != first.ResourceId || again.Directory != first.Directory || again.MetadataUrl != "https://mirror/ubuntu" {
		t.Fatalf("natural-key upsert: %v (first %v)", again, first)
	}

	find := []struct{ version, want string }{
		{"", "2.0.0"}, {">= 1.0, < 2.0", "1.10.0"}, {"~> 1.0", "1.10.0"}, {"1.2", "1.2.0"}, {"1.2.0", "1.2.0"},
		{"< 1.1", "1.0.0"}, {"> 5", ""}, {"9.9.9", ""},
	}
	for _, f := range find {
		got := must(c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu", Provider: "netns", Version: f.version}}))(t).GetBox()
		if got.GetVersion() != f.want {
			t.Errorf("FindBox(%q) = %q, want %q", f.version, got.GetVersion(), f.want)
		}
	}
	for _, v := range []string{"", "0"} {
		if got := must(c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "local", Provider: "netns", Version: v}}))(t).GetBox(); got.GetResourceId() != unversioned.ResourceId {
			t.Errorf("FindBox(local, %q) = %v: an unversioned box must be found", v, got)
		}
	}

	before := must(c.ListBoxes(ctx, &emptypb.Empty{}))(t)
	bad := []struct {
		name string
		b    *vagrant.Box
		code codes.Code
		msg  string
	}{
		{"no provider", &vagrant.Box{Name: "x", Directory: "/x"}, codes.InvalidArgument, "box.provider"},
		{"no directory", &vagrant.Box{Name: "x", Provider: "netns"}, codes.InvalidArgument, "box.directory"},
		{"bad version", &vagrant.Box{Name: "x", Provider: "netns", Directory: "/x", Version: "not-a-version!"}, codes.InvalidArgument, "box.version"},
		{"taken directory", &vagrant.Box{Name: "x", Provider: "netns", Directory: "/boxes/local"}, codes.FailedPrecondition, "box.directory"},
	}
	for _, b := range bad {
		_, err := upsert(b.b)
		code(t, b.name, err, b.code, b.msg)
	}
	_, err := c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu", Provider: "netns", Version: ">>> 1"}})
	code(t, "bad constraint", err, codes.InvalidArgument, "box.version")
	_, err = c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu"}})
	code(t, "find without provider", err, codes.InvalidArgument, "box.provider")
	if after := must(c.ListBoxes(ctx, &emptypb.Empty{}))(t); len(after.Boxes) != len(before.Boxes) || len(after.Boxes) != 6 {
		t.Fatalf("refused requests changed the registry: %d → %d boxes", len(before.Boxes), len(after.Boxes))
	}

	must(c.DeleteBox(ctx, &vagrant.DeleteBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu", Version: "2.0.0", Provider: "netns"}}))(t)
	must(c.DeleteBox(ctx, &vagrant.DeleteBoxRequest{Box: &sdk.Ref_Box{ResourceId: unversioned.ResourceId}}))(t)
	must(c.DeleteBox(ctx, &vagrant.DeleteBoxRequest{Box: &sdk.Ref_Box{ResourceId: unversioned.ResourceId}}))(t) // idempotent
	if got := must(c.FindBox(ctx, &vagrant.FindBoxRequest{Box: &sdk.Ref_Box{Name: "ubuntu", Provider: "netns"}}))(t).GetBox(); got.GetVersion() != "1.10.0" {
		t.Fatalf("after deleting 2.0.0 the highest is %q", got.GetVersion())
	}
	_, err = c.GetBox(ctx, &vagrant.GetBoxRequest{Box: &sdk.Ref_Box{ResourceId: unversioned.ResourceId}})
	code(t, "deleted box", err, codes.NotFound)
}
