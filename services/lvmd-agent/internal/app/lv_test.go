package app_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

func TestVolumeLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{classes: 2, size: 8 << 30, spareGB: 1})
	a := e.start(t, e.config(t))
	ctx := ctxT(t)

	free := func(class string) uint64 {
		t.Helper()
		r, err := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{DeviceClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetFreeBytes()
	}
	info, err := e.vgs[0].Runner.VG(ctx, e.vgs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := free(""); got != info.Free-1<<30 {
		t.Fatalf("GetFreeBytes of the default class %d, want VG free %d minus the 1 GiB spare", got, info.Free)
	}
	if free("ssd") != free("") {
		t.Fatal("the empty class must be the default class")
	}

	res, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-1", SizeGb: 2, Tags: []string{"topolvm.io/owner=x", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// lvm keeps tags as a set (sorted).
	if v := res.GetVolume(); v.GetName() != "pvc-1" || v.GetSizeGb() != 2 || !slices.Equal(v.GetTags(), []string{"b", "topolvm.io/owner=x"}) {
		t.Fatalf("created %v", v)
	}
	if got := free(""); got != info.Free-1<<30-2<<30 {
		t.Fatalf("free after a 2 GiB volume: %d", got)
	}
	// A retried create (the answer was lost) succeeds; another size does not.
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-1", SizeGb: 2, DeviceClass: "ssd"}); err != nil {
		t.Fatalf("repeated create: %v", err)
	}
	_, err = a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-1", SizeGb: 3})
	wantCode(t, err, codes.AlreadyExists, "pvc-1")
	_, err = a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-2", SizeGb: 1, DeviceClass: "nope"})
	wantCode(t, err, codes.NotFound, "device class", "nope")
	_, err = a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-2", SizeGb: 100})
	wantCode(t, err, codes.ResourceExhausted, "free=", "requested=107374182400")
	// The spare is never handed out: what GetFreeBytes reports is all a create may take.
	_, err = a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "pvc-2", SizeGb: free("")>>30 + 1})
	wantCode(t, err, codes.ResourceExhausted)

	list := func(class string) []*lvmdpb.LogicalVolume {
		t.Helper()
		r, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{DeviceClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetVolumes()
	}
	if l := list("ssd"); len(l) != 1 || l[0].GetName() != "pvc-1" || l[0].GetSizeGb() != 2 || len(l[0].GetTags()) != 2 {
		t.Fatalf("list %v", l)
	}
	if l := list("hdd"); len(l) != 0 {
		t.Fatalf("the other class lists %v", l)
	}
	_, err = a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{DeviceClass: "nope"})
	wantCode(t, err, codes.NotFound)

	if _, err := a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 3}); err != nil {
		t.Fatalf("resize to the same size must be a no-op: %v", err)
	}
	_, err = a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 1})
	wantCode(t, err, codes.OutOfRange, "shrinking")
	_, err = a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 0})
	wantCode(t, err, codes.OutOfRange)
	if l := list(""); l[0].GetSizeGb() != 3 {
		t.Fatalf("a refused shrink changed the volume: %v", l)
	}
	_, err = a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 100})
	wantCode(t, err, codes.ResourceExhausted, "free=")
	_, err = a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "missing", SizeGb: 1})
	wantCode(t, err, codes.NotFound, "missing")
	_, err = a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "pvc-1", SizeGb: 4, DeviceClass: "hdd"})
	wantCode(t, err, codes.NotFound)

	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "pvc-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "pvc-1"}); err != nil {
		t.Fatalf("removing a missing volume must succeed: %v", err)
	}
	if l := list(""); len(l) != 0 {
		t.Fatalf("after remove: %v", l)
	}
	_, err = a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "pvc-1", DeviceClass: "nope"})
	wantCode(t, err, codes.NotFound)
}

func TestInvalidRequestsNameTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	for _, tt := range []struct {
		req   *lvmdpb.CreateLVRequest
		field string
	}{
		{&lvmdpb.CreateLVRequest{SizeGb: 1}, "name: is required"},
		{&lvmdpb.CreateLVRequest{Name: "a/b", SizeGb: 1}, "name: may only contain"},
		{&lvmdpb.CreateLVRequest{Name: "-a", SizeGb: 1}, "name:"},
		{&lvmdpb.CreateLVRequest{Name: "snapshot1", SizeGb: 1}, "name: must not start with \"snapshot\""},
		{&lvmdpb.CreateLVRequest{Name: "x_tmeta", SizeGb: 1}, "name: must not contain"},
		{&lvmdpb.CreateLVRequest{Name: strings.Repeat("a", 128), SizeGb: 1}, "name: is 128 bytes"},
		{&lvmdpb.CreateLVRequest{Name: "a"}, "size_gb: must be at least 1"},
		{&lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1 << 40}, "size_gb:"},
		{&lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1, Tags: []string{"ok", "bad tag"}}, "tags[1]:"},
		{&lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1, Tags: []string{"x\x00"}}, "tags[0]:"},
		{&lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1, DeviceClass: "ss\x00d"}, "device_class: must not contain NUL"},
		{&lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1, DataSource: &lvmdpb.DataSource{}}, "data_source.s3: is required"},
	} {
		_, err := a.lv.CreateLV(ctx, tt.req)
		wantCode(t, err, codes.InvalidArgument, tt.field)
	}
	_, err := a.lv.CreateBackup(ctx, &lvmdpb.CreateBackupRequest{})
	wantCode(t, err, codes.InvalidArgument, "backup: is required")
	if l, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{}); err != nil || len(l.GetVolumes()) != 0 {
		t.Fatalf("refused requests created volumes: %v %v", l, err)
	}
}

// TestConcurrentCreatesRaceForTheLastExtents starts more creates than the class can hold at
// once: exactly as many succeed as fit, the rest are refused, nothing is over-allocated.
func TestConcurrentCreatesRaceForTheLastExtents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30}) // a little under 4 GiB allocatable: three 1 GiB volumes
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	before, err := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	fit := int(before.GetFreeBytes() >> 30)
	const racers = 8
	var wg sync.WaitGroup
	codesSeen := make([]codes.Code, racers)
	for i := range racers {
		wg.Go(func() {
			_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "race-" + string(rune('a'+i)), SizeGb: 1})
			codesSeen[i] = status.Code(err)
		})
	}
	wg.Wait()
	ok := 0
	for _, c := range codesSeen {
		switch c {
		case codes.OK:
			ok++
		case codes.ResourceExhausted:
		default:
			t.Fatalf("a racing create answered %v", c)
		}
	}
	if ok != fit {
		t.Fatalf("%d creates succeeded; exactly %d fit", ok, fit)
	}
	l, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{})
	if err != nil || len(l.GetVolumes()) != fit {
		t.Fatalf("volumes %v %v", l, err)
	}
	info, _ := e.vgs[0].Runner.VG(ctx, e.vgs[0].Name)
	if info.Free != before.GetFreeBytes()-uint64(fit)<<30 {
		t.Fatalf("VG free %d after %d volumes from %d", info.Free, fit, before.GetFreeBytes())
	}
}
