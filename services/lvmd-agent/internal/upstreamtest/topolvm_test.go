// Package upstreamtest drives the agent with TopoLVM's own generated lvmd client
// (github.com/topolvm/topolvm v0.11.0, lvmd/proto) over the agent's unix socket, the way
// TopoLVM's node plugin does: create, list, resize, remove, free space and Watch. The agent
// runs as its own process: TopoLVM's descriptors and Plinth's share full names and cannot be
// registered in one binary.
package upstreamtest

import (
	"context"
	"testing"
	"time"

	topolvm "github.com/topolvm/topolvm/lvmd/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/testenv"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/agenttest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestTopoLVMClientDrivesTheAgent(t *testing.T) {
	t.Parallel()
	bin := agenttest.Binary(t, "../..")
	env := agenttest.NewEnv(t, 2, 4<<30)
	env.Start(t, bin, "PLINTH_LVMD_POLL_INTERVAL=1s")
	conn, err := grpc.NewClient("unix://"+env.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lv, vg := topolvm.NewLVServiceClient(conn), topolvm.NewVGServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	watch, err := vg.Watch(ctx, &topolvm.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil {
		t.Fatal(err)
	}
	free, err := vg.GetFreeBytes(ctx, &topolvm.GetFreeBytesRequest{DeviceClass: "ssd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.GetItems()) != 2 || first.GetFreeBytes() != free.GetFreeBytes() || free.GetFreeBytes() < 3<<30 {
		t.Fatalf("first watch message %v, free %d", first, free.GetFreeBytes())
	}

	// The node plugin's LogicalVolume reconciler: create with the LogicalVolume's UID as
	// name and tags, then find it in the list.
	name := "3c3d6e31-2c1b-4f7e-9d2b-5c9b0f0f1a01"
	res, err := lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: name, SizeGb: 1, Tags: []string{"topolvm/createdby=topolvm"}, DeviceClass: "ssd"})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetVolume().GetName() != name || res.GetVolume().GetSizeGb() != 1 {
		t.Fatalf("created %v", res.GetVolume())
	}
	list, err := vg.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "ssd"})
	if err != nil || len(list.GetVolumes()) != 1 || list.GetVolumes()[0].GetTags()[0] != "topolvm/createdby=topolvm" {
		t.Fatalf("list %v %v", list, err)
	}
	next := func(what string, ok func(*topolvm.WatchResponse) bool) {
		t.Helper()
		for {
			m, err := watch.Recv()
			if err != nil {
				t.Fatalf("watch ended before %s: %v", what, err)
			}
			if ok(m) {
				return
			}
		}
	}
	next("the new volume", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free.GetFreeBytes()-1<<30 })

	if _, err := lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: name, SizeGb: 2, DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	next("the resize", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free.GetFreeBytes()-2<<30 })
	_, err = lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: name, SizeGb: 1, DeviceClass: "ssd"})
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("shrink: %v", err)
	}
	_, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: "too-big", SizeGb: 64, DeviceClass: "hdd"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized: %v", err)
	}
	_, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: "x", SizeGb: 1, DeviceClass: "missing"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("unknown class: %v", err)
	}

	if _, err := lv.RemoveLV(ctx, &topolvm.RemoveLVRequest{Name: name, DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := lv.RemoveLV(ctx, &topolvm.RemoveLVRequest{Name: name, DeviceClass: "ssd"}); err != nil {
		t.Fatalf("removing again: %v", err)
	}
	next("the removal", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free.GetFreeBytes() })
	if list, _ := vg.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "ssd"}); len(list.GetVolumes()) != 0 {
		t.Fatalf("after remove %v", list)
	}
}
