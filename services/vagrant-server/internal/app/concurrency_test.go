package app_test

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// Upserts without a resource_id race to create the same target or box, on two replicas: one
// creates it, the others find it and update it. Nobody gets an error, nothing is duplicated.
func TestConcurrentUpsertsOfOneNaturalKeyMakeOneResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clients := []vagrant.VagrantClient{e.start(t), e.start(t)}
	ctx := call(t, e.bootstrap(t, clients[0]))
	must(clients[0].UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "dev", Path: "/dev"}}))(t)
	pref := &sdk.Ref_Project{Name: "web", Basis: &sdk.Ref_Basis{Name: "dev"}}
	must(clients[0].UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "web", Path: "/web", Basis: pref.Basis}}))(t)

	const n = 12
	var wg sync.WaitGroup
	ids := make(chan string, 2*n)
	for i := range n {
		c := clients[i%2]
		wg.Go(func() {
			tr, err := c.UpsertTarget(ctx, &vagrant.UpsertTargetRequest{Target: &vagrant.Target{
				Name: "default", Project: pref, Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"writer": fmt.Sprint(i)}}}})
			if err != nil {
				t.Errorf("target upsert %d: %v", i, err)
				return
			}
			ids <- "target " + tr.GetTarget().GetResourceId()
			b, err := c.UpsertBox(ctx, &vagrant.UpsertBoxRequest{Box: &vagrant.Box{
				Name: "ubuntu", Version: "1.0.0", Provider: "netns", Directory: "/boxes/ubuntu"}})
			if err != nil {
				t.Errorf("box upsert %d: %v", i, err)
				return
			}
			ids <- "box " + b.GetBox().GetResourceId()
		})
	}
	wg.Wait()
	close(ids)
	distinct := map[string]bool{}
	for id := range ids {
		distinct[id] = true
	}
	if len(distinct) != 2 {
		t.Fatalf("%d concurrent upserts of one target and one box gave ids %v", n, distinct)
	}
	if got := must(clients[1].ListTargets(ctx, &emptypb.Empty{}))(t); len(got.Targets) != 1 {
		t.Fatalf("targets: %v", got.Targets)
	}
	if got := must(clients[1].ListBoxes(ctx, &emptypb.Empty{}))(t); len(got.Boxes) != 1 {
		t.Fatalf("boxes: %v", got.Boxes)
	}
}
