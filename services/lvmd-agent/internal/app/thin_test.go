package app_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

// TestThinClassOnDeviceMapper drives a thin class end to end on real device-mapper (in a VM
// where this kernel has none), as TopoLVM's node does for a thin StorageClass and a
// VolumeSnapshot: a thin volume with a filesystem, a read-only snapshot that keeps the data
// of its moment while the origin changes, a read-write one, the overprovisioned space in
// GetFreeBytes and Watch, and the refusals.
func TestThinClassOnDeviceMapper(t *testing.T) {
	if lvmtest.OnDeviceMapper(t) {
		return
	}
	e := newEnv(t, envOptions{size: 2 << 30})
	vg := e.vgs[0]
	vg.ThinPool(t, "pool0", 512<<20)
	f, err := os.OpenFile(filepath.Join(e.dir, "lvmd.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "  - name: thin\n    volume-group: %s\n    spare-gb: 0\n    type: thin\n    thin-pool:\n      name: pool0\n      overprovision-ratio: 5\n", vg.Name)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	a := e.start(t, e.config(t))
	// Software emulation, -race and a loaded host: minutes (measured 6 to 11), not seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	t.Cleanup(cancel)
	free := func(class string) uint64 {
		t.Helper()
		res, err := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{DeviceClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return res.GetFreeBytes()
	}
	if got := free("thin"); got != 2560<<20 {
		t.Fatalf("a 512 MiB pool overprovisioned 5 times has %d bytes free, want 2.5 GiB", got)
	}
	watch, err := a.vg.Watch(ctx, &lvmdpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var thinItem, thickItem *lvmdpb.WatchItem
	for _, it := range first.GetItems() {
		switch it.GetDeviceClass() {
		case "thin":
			thinItem = it
		case "ssd":
			thickItem = it
		}
	}
	if thinItem == nil || thickItem == nil || thinItem.GetThinPool().GetSizeBytes() != 512<<20 || thinItem.GetThinPool().GetOverprovisionBytes() != 2560<<20 ||
		thinItem.GetSizeBytes() != thickItem.GetSizeBytes() || thinItem.GetFreeBytes() != thickItem.GetFreeBytes() || thickItem.GetThinPool() != nil {
		t.Fatalf("Watch items %v", first.GetItems())
	}

	// Today's wire (size_bytes alone) into the thin class.
	var created lvmdpb.CreateLVResponse
	if err := a.conn.Invoke(ctx, "/proto.LVService/CreateLV", &lvmdpb.OptionClassCreateLVRequest{Name: "data", SizeBytes: 1 << 30, DeviceClass: "thin"}, &created); err != nil {
		t.Fatal(err)
	}
	data := created.GetVolume()
	if data.GetSizeBytes() != 1<<30 || data.GetAttr()[0] != 'V' || data.GetPath() != "/dev/"+vg.Name+"/data" {
		t.Fatalf("thin volume %v", data)
	}
	if got := free("thin"); got != 1536<<20 {
		t.Fatalf("free after a 1 GiB thin volume: %d", got)
	}
	if got, before := free("ssd"), thickItem.GetFreeBytes(); got != before {
		t.Fatalf("the thick class's free space moved from %d to %d: thin volumes take nothing from the group", before, got)
	}
	run(t, "mkfs.ext4", "-q", data.GetPath())
	mnt := t.TempDir()
	run(t, "mount", data.GetPath(), mnt)
	writeFile(t, filepath.Join(mnt, "moment"), "before the snapshot")
	run(t, "umount", mnt)

	snap, err := a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "data-snap", DeviceClass: "thin", SourceVolume: "data", AccessType: "ro", Tags: []string{"snapshot"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := snap.GetSnapshot(); s.GetSizeBytes() != 1<<30 || s.GetAttr()[1] != 'r' || len(s.GetTags()) != 1 {
		t.Fatalf("read-only snapshot %v", s)
	}
	// The origin changes; the snapshot keeps its moment and cannot be written.
	run(t, "mount", data.GetPath(), mnt)
	writeFile(t, filepath.Join(mnt, "moment"), "after the snapshot")
	run(t, "umount", mnt)
	snapMnt := t.TempDir()
	run(t, "mount", "-o", "ro", snap.GetSnapshot().GetPath(), snapMnt)
	if got := readFile(t, filepath.Join(snapMnt, "moment")); got != "before the snapshot" {
		t.Fatalf("the snapshot holds %q", got)
	}
	run(t, "umount", snapMnt)
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+snap.GetSnapshot().GetPath(), "bs=4096", "count=1", "oflag=direct").CombinedOutput(); err == nil {
		t.Fatalf("a read-only snapshot was written: %s", out)
	}

	// Refusals: no room for another 1 GiB, a thick class, a bad access type, a smaller size.
	_, err = a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "rw", DeviceClass: "thin", SourceVolume: "data", AccessType: "rw"})
	wantCode(t, err, codes.ResourceExhausted, "free=536870912")
	_, err = a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "rw", DeviceClass: "ssd", SourceVolume: "data", AccessType: "rw"})
	wantCode(t, err, codes.Unimplemented, "not thin")
	_, err = a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "rw", DeviceClass: "thin", SourceVolume: "data", AccessType: "rwx"})
	wantCode(t, err, codes.InvalidArgument, "access_type")
	_, err = a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "rw", DeviceClass: "thin", SourceVolume: "data", AccessType: "rw", SizeBytes: 512 << 20})
	wantCode(t, err, codes.OutOfRange, "size_bytes")

	// A read-write snapshot, grown past its source, once the read-only one is gone.
	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "data-snap", DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	rw, err := a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "clone", DeviceClass: "thin", SourceVolume: "data", AccessType: "rw", SizeBytes: 1<<30 + 256<<20})
	if err != nil {
		t.Fatal(err)
	}
	if s := rw.GetSnapshot(); s.GetSizeBytes() != 1<<30+256<<20 || s.GetAttr()[1] != 'w' {
		t.Fatalf("read-write snapshot %v", s)
	}
	run(t, "mount", rw.GetSnapshot().GetPath(), snapMnt)
	if got := readFile(t, filepath.Join(snapMnt, "moment")); got != "after the snapshot" {
		t.Fatalf("the clone holds %q", got)
	}
	writeFile(t, filepath.Join(snapMnt, "moment"), "the clone's own")
	run(t, "umount", snapMnt)
	run(t, "mount", "-o", "ro", data.GetPath(), mnt)
	if got := readFile(t, filepath.Join(mnt, "moment")); got != "after the snapshot" {
		t.Fatalf("writing the clone changed its origin: %q", got)
	}
	run(t, "umount", mnt)

	list, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{DeviceClass: "thin"})
	if err != nil || len(list.GetVolumes()) != 2 {
		t.Fatalf("thin GetLVList %v %v", list, err)
	}
	if thick, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{DeviceClass: "ssd"}); err != nil || len(thick.GetVolumes()) != 0 {
		t.Fatalf("the thick class lists %v %v: neither the pool nor thin volumes are its", thick, err)
	}

	// A backup of a thin volume to S3 (read through a short-lived snapshot of the active
	// volume), restored byte for byte into a new thin volume.
	b := newBucket(t, e)
	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "clone", DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	if err := a.conn.Invoke(ctx, "/proto.LVService/CreateLV", &lvmdpb.OptionClassCreateLVRequest{Name: "bk", SizeBytes: 16 << 20, DeviceClass: "thin"}, &created); err != nil {
		t.Fatal(err)
	}
	want := fillDevice(t, created.GetVolume().GetPath(), 16<<20)
	src := &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("thin/bk", "")}}
	if st := backupUntilDone(t, ctx, a, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-thin", VolumeHandle: "bk", DataSource: src}}); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("backup of a thin volume: %v", st)
	}
	src.SynchronousRestore = true
	back, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "bk-restored", SizeGb: 1, DeviceClass: "thin", DataSource: src})
	if err != nil {
		t.Fatal(err)
	}
	if v := back.GetVolume(); v.GetAttr()[0] != 'V' || hashDevice(t, v.GetPath(), 16<<20) != want {
		t.Fatalf("the restored thin volume %v differs from the backup's source", v)
	}
	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "bk-restored", DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	// A backup of a read-only snapshot (a VolumeSnapshot's), after its origin changed: the
	// snapshot's bytes come back.
	if _, err := a.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{Name: "bk-snap", DeviceClass: "thin", SourceVolume: "bk", AccessType: "ro"}); err != nil {
		t.Fatal(err)
	}
	_ = fillDevice(t, created.GetVolume().GetPath(), 16<<20)
	snapSrc := &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("thin/bk-snap", "")}}
	if st := backupUntilDone(t, ctx, a, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-snap", VolumeHandle: "bk-snap", DataSource: snapSrc}}); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("backup of a read-only snapshot: %v", st)
	}
	snapSrc.SynchronousRestore = true
	fromSnap, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "bk-snap-restored", SizeGb: 1, DeviceClass: "thin", DataSource: snapSrc})
	if err != nil {
		t.Fatal(err)
	}
	if hashDevice(t, fromSnap.GetVolume().GetPath(), 16<<20) != want {
		t.Fatal("the volume restored from the snapshot's backup differs from the snapshot")
	}
	for _, name := range []string{"bk-snap", "bk-snap-restored"} {
		if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name, DeviceClass: "thin"}); err != nil {
			t.Fatal(err)
		}
	}

	// A thick volume beside: activated, a file system, grown with the file system after it
	// (what TopoLVM's node does on a PVC's expansion).
	if err := a.conn.Invoke(ctx, "/proto.LVService/CreateLV", &lvmdpb.OptionClassCreateLVRequest{Name: "thick", SizeBytes: 128 << 20, DeviceClass: "ssd"}, &created); err != nil {
		t.Fatal(err)
	}
	thick := created.GetVolume()
	if thick.GetAttr()[4] != 'a' || thick.GetDevMajor() == 0 {
		t.Fatalf("thick volume %v: want it active with device numbers", thick)
	}
	run(t, "mkfs.ext4", "-q", thick.GetPath())
	run(t, "mount", thick.GetPath(), mnt)
	writeFile(t, filepath.Join(mnt, "kept"), "across the grow")
	var grown lvmdpb.ResizeLVResponse
	if err := a.conn.Invoke(ctx, "/proto.LVService/ResizeLV", &lvmdpb.ResizeLVRequest{Name: "thick", SizeBytes: 256 << 20, DeviceClass: "ssd"}, &grown); err != nil ||
		grown.GetSizeBytes() != 256<<20 {
		t.Fatalf("grow: %v %v", &grown, err)
	}
	run(t, "resize2fs", thick.GetPath())
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil || uint64(st.Blocks)*uint64(st.Bsize) < 200<<20 {
		t.Fatalf("the file system after resize2fs: %d blocks of %d, %v", st.Blocks, st.Bsize, err)
	}
	if got := readFile(t, filepath.Join(mnt, "kept")); got != "across the grow" {
		t.Fatalf("after the grow the file holds %q", got)
	}
	run(t, "umount", mnt)
	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "thick", DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bk", "data"} {
		if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name, DeviceClass: "thin"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := free("thin"); got != 2560<<20 {
		t.Fatalf("free after removing everything: %d", got)
	}

	// make up's volume group (lvmd-agent dev-vg) offers a thin class where device-mapper is,
	// and a second run (every make up) finds its pool.
	dev := t.TempDir()
	devVG := fmt.Sprintf("plinthtest_dev%d", os.Getpid())
	t.Cleanup(func() {
		_ = app.Main(context.Background(), []string{"dev-vg", "-dir", dev, "-vg", devVG, "-remove"}, nil)
	})
	for range 2 {
		if err := app.Main(ctx, []string{"dev-vg", "-dir", dev, "-vg", devVG, "-size", "1G"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	file, _, err := deviceclass.Parse([]byte(readFile(t, filepath.Join(dev, app.DevConfigName))))
	if err != nil {
		t.Fatal(err)
	}
	classes, err := deviceclass.New(file)
	if err != nil {
		t.Fatal(err)
	}
	if thin, err := classes.Get("dev-thin"); err != nil || thin.Pool() != "thinpool" || thin.VolumeGroup != devVG || classes.Default().Name != "dev" {
		t.Fatalf("dev-vg's classes %+v: want dev (default) and dev-thin on pool thinpool", classes.All())
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fillDevice writes random blocks at a device's start, middle and end and returns the
// SHA-256 of its first size bytes.
func fillDevice(t *testing.T, path string, size int64) string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	for _, off := range []int64{0, size/2 - 1<<19, size - int64(len(block))} {
		_, _ = rand.Read(block)
		if _, err := f.WriteAt(block, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return hashDevice(t, path, size)
}

// hashDevice is the SHA-256 of a device's first size bytes.
func hashDevice(t *testing.T, path string, size int64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.CopyN(h, f, size); err != nil || n != size {
		t.Fatalf("read %s: %d bytes, %v", path, n, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
