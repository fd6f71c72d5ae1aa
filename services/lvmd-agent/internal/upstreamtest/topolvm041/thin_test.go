package topolvm041

import (
	"context"
	"testing"
	"time"

	topolvm "github.com/topolvm/topolvm/pkg/lvmd/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestTopoLVM041ThinClient drives a thin class the way v0.41.0's node plugin does for a thin
// StorageClass, a VolumeSnapshot and a PVC restored from it: the node's capacity from
// Watch's thin_pool, CreateLV, CreateLVSnapshot (ro for a snapshot, rw for a restore, whose
// size_bytes may exceed the source's), ResizeLV and RemoveLV. lvmd-agent's
// internal/upstreamtest starts the agent on device-mapper (LVMD_AGENT_SOCKET, with a thin
// class "thin" on a 512 MiB pool overprovisioned 4 times, no spare).
func TestTopoLVM041ThinClient(t *testing.T) {
	lv, vgs := dial(t, agentEnv(t, "LVMD_AGENT_SOCKET")["LVMD_AGENT_SOCKET"])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // software emulation
	defer cancel()

	thinItem := func() *topolvm.WatchItem {
		t.Helper()
		watch, err := vgs.Watch(ctx, &topolvm.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = watch.CloseSend() }()
		m, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range m.GetItems() {
			if it.GetDeviceClass() == "thin" {
				return it
			}
		}
		t.Fatalf("no thin item in %v", m)
		return nil
	}
	// The node annotates capacity.topolvm.io/thin with overprovision_bytes.
	if it := thinItem(); it.GetThinPool().GetOverprovisionBytes() != 2<<30 || it.GetThinPool().GetSizeBytes() != 512<<20 {
		t.Fatalf("thin item %v", it)
	}
	const src, snap, restored = "6c0b9e2a-5d4f-4a8e-b1c3-000000000001", "6c0b9e2a-5d4f-4a8e-b1c3-000000000002", "6c0b9e2a-5d4f-4a8e-b1c3-000000000003"
	res, err := lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: src, SizeBytes: 512 << 20, DeviceClass: "thin"})
	if err != nil || res.GetVolume().GetSizeBytes() != 512<<20 || res.GetVolume().GetAttr()[0] != 'V' {
		t.Fatalf("thin volume %v %v", res, err)
	}
	s, err := lv.CreateLVSnapshot(ctx, &topolvm.CreateLVSnapshotRequest{Name: snap, DeviceClass: "thin", SourceVolume: src, AccessType: "ro", SizeBytes: 512 << 20})
	if err != nil || s.GetSnapshot().GetSizeBytes() != 512<<20 || s.GetSnapshot().GetAttr()[1] != 'r' || s.GetSnapshot().GetPath() == "" {
		t.Fatalf("read-only snapshot %v %v", s, err)
	}
	r, err := lv.CreateLVSnapshot(ctx, &topolvm.CreateLVSnapshotRequest{Name: restored, DeviceClass: "thin", SourceVolume: snap, AccessType: "rw", SizeBytes: 768 << 20})
	if err != nil || r.GetSnapshot().GetSizeBytes() != 768<<20 || r.GetSnapshot().GetAttr()[1] != 'w' {
		t.Fatalf("a restore from the snapshot %v %v", r, err)
	}
	if it := thinItem(); it.GetThinPool().GetOverprovisionBytes() != 2<<30-512<<20-512<<20-768<<20 {
		t.Fatalf("thin item after three volumes %v", it)
	}
	resized, err := lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: restored, SizeBytes: 1 << 30, DeviceClass: "thin"})
	if err != nil || resized.GetSizeBytes() != 1<<30 {
		t.Fatalf("grow the restored volume: %v %v", resized, err)
	}
	_, err = lv.CreateLVSnapshot(ctx, &topolvm.CreateLVSnapshotRequest{Name: "x", DeviceClass: "ssd", SourceVolume: src, AccessType: "ro"})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("a snapshot in a thick class: %v, want Unimplemented as lvmd answers", err)
	}
	_, err = lv.CreateLVSnapshot(ctx, &topolvm.CreateLVSnapshotRequest{Name: "x", DeviceClass: "thin", SourceVolume: "missing", AccessType: "ro"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("a snapshot of a missing volume: %v", err)
	}
	list, err := vgs.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "thin"})
	if err != nil || len(list.GetVolumes()) != 3 {
		t.Fatalf("thin list %v %v", list, err)
	}
	for _, name := range []string{restored, snap, src} {
		if _, err := lv.RemoveLV(ctx, &topolvm.RemoveLVRequest{Name: name, DeviceClass: "thin"}); err != nil {
			t.Fatal(err)
		}
	}
	if it := thinItem(); it.GetThinPool().GetOverprovisionBytes() != 2<<30 {
		t.Fatalf("thin item after the removals %v", it)
	}
}
