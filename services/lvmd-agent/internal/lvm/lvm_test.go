package lvm_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestCommandsOnARealVolumeGroup(t *testing.T) {
	t.Parallel()
	vg := lvmtest.New(t, lvmtest.Options{Size: 4 << 30})
	r, ctx := vg.Runner, ctxT(t)

	info, err := r.VG(ctx, vg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if info.ExtentSize != 4<<20 || info.Free != info.Size || info.Size < 3<<30 {
		t.Fatalf("fresh VG %+v", info)
	}
	if err := r.Create(ctx, vg.Name, lvm.CreateSpec{Name: "data", Size: 1 << 30, Tags: []string{"a", "owner=x"}}); err != nil {
		t.Fatal(err)
	}
	lvs, err := r.LVs(ctx, vg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(lvs) != 1 || lvs[0].Name != "data" || lvs[0].Size != 1<<30 || !slices.Equal(lvs[0].Tags, []string{"a", "owner=x"}) {
		t.Fatalf("lvs %+v", lvs)
	}
	if err := r.Create(ctx, vg.Name, lvm.CreateSpec{Name: "data", Size: 1 << 30}); !errors.Is(err, lvm.ErrExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if err := r.Create(ctx, vg.Name, lvm.CreateSpec{Name: "huge", Size: 100 << 30}); !errors.Is(err, lvm.ErrNoSpace) {
		t.Fatalf("oversized create: %v", err)
	}
	var le *lvm.Error
	if err := r.Remove(ctx, vg.Name, "missing"); !errors.Is(err, lvm.ErrLVNotFound) || !errors.As(err, &le) || le.Command != "lvremove" {
		t.Fatalf("remove missing: %v", err)
	}
	if _, err := r.VG(ctx, vg.Name+"x"); !errors.Is(err, lvm.ErrVGNotFound) {
		t.Fatalf("missing VG: %v", err)
	}
	if err := r.Resize(ctx, vg.Name, "data", 2<<30); err != nil {
		t.Fatal(err)
	}
	if after, _ := r.VG(ctx, vg.Name); after.Free != info.Free-2<<30 {
		t.Fatalf("free after resize %d, want %d", after.Free, info.Free-2<<30)
	}
	if err := r.Remove(ctx, vg.Name, "data"); err != nil {
		t.Fatal(err)
	}
	if lvs, _ := r.LVs(ctx, vg.Name); len(lvs) != 0 {
		t.Fatalf("after remove: %+v", lvs)
	}
}

// TestRawVolumeMatchesTheReferenceMapping writes through the agent's layout and reads with
// lvmtest's independent mapping (and the other way round) on a volume of three segments.
func TestRawVolumeMatchesTheReferenceMapping(t *testing.T) {
	t.Parallel()
	vg := lvmtest.New(t, lvmtest.Options{Size: 4 << 30})
	r, ctx := vg.Runner, ctxT(t)
	for _, lv := range []string{"a", "b"} {
		if err := r.Create(ctx, vg.Name, lvm.CreateSpec{Name: lv, Size: 256 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	// "a" grows past "b": a second segment; removing "b" and growing again makes a third.
	if err := r.Resize(ctx, vg.Name, "a", 512<<20); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, vg.Name, "b"); err != nil {
		t.Fatal(err)
	}
	if err := r.Resize(ctx, vg.Name, "a", 1<<30); err != nil {
		t.Fatal(err)
	}
	layout := openLayout(t, r, vg.Name, "a")
	if len(layout.Extents()) < 2 || layout.Size != 1<<30 {
		t.Fatalf("want a multi-segment 1 GiB layout, got %d segments, %d bytes", len(layout.Extents()), layout.Size)
	}
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	offsets := []int64{0, 256<<20 - 1<<20, 512<<20 - 5, 1<<30 - int64(len(data))} // across segment boundaries
	raw, err := lvm.OpenRaw(layout, true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, off := range offsets {
		if _, err := raw.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
		if got := vg.ReadLV(t, "a", off, len(data)); !bytes.Equal(got, data) {
			t.Fatalf("bytes written at %d by the layout read back differently by the reference", off)
		}
	}
	_, _ = rand.Read(data)
	vg.WriteLV(t, "a", 300<<20, data)
	got := make([]byte, len(data))
	if _, err := raw.ReadAt(got, 300<<20); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reference write read back differently through the layout: %v", err)
	}
	if n, err := raw.ReadAt(got, 1<<30-10); n != 10 || !errors.Is(err, io.EOF) {
		t.Fatalf("read past the end: %d %v", n, err)
	}
}

func openLayout(t *testing.T, r *lvm.Runner, vg, lv string) *lvm.Layout {
	t.Helper()
	ctx := ctxT(t)
	info, err := r.VG(ctx, vg)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := r.Segments(ctx, vg, lv)
	if err != nil {
		t.Fatal(err)
	}
	pvs, err := r.PVs(ctx, vg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lvm.NewLayout(segs, pvs, info.ExtentSize)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestStripedSegmentsAreReported(t *testing.T) {
	t.Parallel()
	vg := lvmtest.New(t, lvmtest.Options{Size: 2 << 30, PVs: 2})
	r, ctx := vg.Runner, ctxT(t)
	if err := r.Create(ctx, vg.Name, lvm.CreateSpec{Name: "s", Size: 256 << 20, Stripes: 2, StripeSize: "64k"}); err != nil {
		t.Fatal(err)
	}
	segs, err := r.Segments(ctx, vg.Name, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 1 || segs[0].Type != "striped" || len(segs[0].Areas) != 2 || segs[0].StripeSize != 64<<10 {
		t.Fatalf("segments %+v", segs)
	}
	l := openLayout(t, r, vg.Name, "s")
	if got := l.Devices(); len(got) != 2 {
		t.Fatalf("devices %v", got)
	}
}

// TestTimeoutKillsTheCommand runs a stand-in lvm that hangs.
func TestTimeoutKillsTheCommand(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "lvm")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var outcome string
	r := lvm.New(lvm.Options{Binary: bin, Timeout: 200 * time.Millisecond, Observe: func(_, o string, _ time.Duration) { outcome = o }})
	start := time.Now()
	_, err := r.VG(ctxT(t), "any")
	if !errors.Is(err, lvm.ErrTimeout) || outcome != "timeout" {
		t.Fatalf("err %v outcome %q", err, outcome)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the hung command was not stopped")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.VG(ctx, "any"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled caller must see its cancellation, got %v", err)
	}
}

func TestLockSerialisesPerVolumeGroup(t *testing.T) {
	t.Parallel()
	r := lvm.New(lvm.Options{})
	unlock, err := r.Lock(context.Background(), "vg1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.Lock(context.Background(), "vg2")
	if err != nil {
		t.Fatal("another volume group must not wait")
	}
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Lock(ctx, "vg1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock of vg1: %v", err)
	}
	unlock()
	again, err := r.Lock(context.Background(), "vg1")
	if err != nil {
		t.Fatal(err)
	}
	again()
}
