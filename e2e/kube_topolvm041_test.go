package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// checkTopoLVM041NodePlugin: TopoLVM v0.41.0's node plugin (from its Go module), which speaks
// today's lvmd wire (sizes in bytes only, CreateLVSnapshot) in the topolvm.io group, against
// lvmd-agent's DaemonSet, after v0.11's check. The Node's capacity.topolvm.io annotations are
// lvmd-agent's free bytes; a LogicalVolume of a size that is no whole number of GiB nor of
// extents becomes an LV of that size rounded up to the volume group's extent (CreateLV with
// size_bytes), in status.currentSize, through the gateway and by lvs; a larger spec.size grows
// it (ResizeLV, its size_bytes answer in status.currentSize); a snapshot LogicalVolume of it
// makes the plugin call CreateLVSnapshot; deleting the objects removes the LV (RemoveLV) and
// the capacity comes back.
func (k *kubeStack) checkTopoLVM041NodePlugin(t *testing.T) {
	c := k.startTopoLVM(t, topolvm041)
	free := c.freeBytes(t)
	c.capacityIs(t, "at start", free)
	extent := vgExtentBytes(t, c)

	name := "e2e-" + randomHex(t, 4)
	size := roundUp(300_000_000, extent) // 300M: decimal, so no whole number of 4 MiB extents
	uid := c.create(t, name, map[string]any{"size": "300M"})
	c.statusIs(t, "created", name, uid, size)
	c.lvIs(t, "created", uid, size)
	c.capacityIs(t, "after the 300M volume", free-uint64(size))

	grown := roundUp(700_000_000, extent)
	c.resize(t, name, "700M")
	c.statusIs(t, "resized", name, uid, grown)
	c.lvIs(t, "resized", uid, grown)
	c.capacityIs(t, "after the resize to 700M", free-uint64(grown))

	// A snapshot LogicalVolume (what topolvm-controller makes for a VolumeSnapshot): the
	// plugin calls CreateLVSnapshot with the source's LV. This node's kernel has no
	// device-mapper, so kube-up's volume group offers only a thick class, and lvmd-agent
	// refuses a snapshot there with Unimplemented, as TopoLVM's lvmd does (snapshots are thin);
	// the plugin records the refusal in status.code and status.message. Its message is
	// lvmd-agent's own (the same as through the gateway), not gRPC's for a method the server
	// lacks: the call went the whole way. Thin snapshots are tested on device-mapper in
	// lvmd-agent's VM tests.
	snap := name + "-snap"
	snapUID := c.create(t, snap, map[string]any{"size": strconv.FormatInt(grown, 10), "source": name, "accessType": "ro"})
	refusal := c.status(t, "snapshot", snap, func(s map[string]any) error {
		if code, _, _ := unstructured.NestedInt64(s, "code"); codes.Code(code) != codes.Unimplemented {
			return fmt.Errorf("want status.code %d (%s)", codes.Unimplemented, codes.Unimplemented)
		}
		return nil
	})
	direct := snapshotThroughGateway(t, c, uid, grown)
	if msg, _, _ := unstructured.NestedString(refusal, "message"); status.Code(direct) != codes.Unimplemented || msg != status.Convert(direct).Message() {
		t.Errorf("snapshot: the plugin recorded %q; lvmd-agent answers the same request through the gateway %v", msg, direct)
	}
	if id, _, _ := unstructured.NestedString(refusal, "volumeID"); id != "" {
		t.Errorf("snapshot: status.volumeID %q for a refused snapshot", id)
	}
	c.lvIs(t, "snapshot refused", snapUID, 0)
	c.capacityIs(t, "after the refused snapshot", free-uint64(grown))

	c.delete(t, snap)
	c.delete(t, name)
	c.lvIs(t, "deleted", uid, 0)
	c.capacityIs(t, "after the delete", free)
}

// snapshotThroughGateway asks lvmd-agent through the gateway for the snapshot the plugin asked
// for (under another name) and returns its answer; one that was made is removed again.
func snapshotThroughGateway(t *testing.T, c *topolvmCheck, source string, size int64) error {
	t.Helper()
	name := "e2e-gw-snap-" + randomHex(t, 4)
	_, err := c.lv.CreateLVSnapshot(withToken(callCtx(t), c.token), &lvmdpb.CreateLVSnapshotRequest{
		Name: name, DeviceClass: topolvmClass, SourceVolume: source, SizeBytes: size, AccessType: "ro",
	})
	if err == nil {
		if _, err := c.lv.RemoveLV(withToken(callCtx(t), c.token), &lvmdpb.RemoveLVRequest{Name: name, DeviceClass: topolvmClass}); err != nil {
			t.Errorf("remove snapshot %s: %v", name, err)
		}
	}
	return err
}

// vgExtentBytes is the extent size of kube-up's volume group, which sizes are rounded up to.
func vgExtentBytes(t *testing.T, c *topolvmCheck) int64 {
	t.Helper()
	out, err := exec.CommandContext(c.k.ctx, "vgs", "--noheadings", "--units", "b", "--nosuffix", "-o", "vg_extent_size", topolvmVG).Output()
	extent, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || perr != nil || extent <= 0 {
		t.Fatalf("vgs %s: %q, %v", topolvmVG, out, err)
	}
	return extent
}

func roundUp(n, unit int64) int64 { return (n + unit - 1) / unit * unit }
