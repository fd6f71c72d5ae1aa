// Package topolvm041 drives lvmd-agent with TopoLVM v0.41.0's own generated lvmd client
// (github.com/topolvm/topolvm/pkg/lvmd/proto), the way its node plugin calls lvmd: sizes in
// bytes (size_gb is reserved since v0.36.5), sub-GiB volumes, ResizeLVResponse.size_bytes,
// LogicalVolume path and attr, WatchItem.size_bytes and an lvcreate option class. It is a
// module of its own because the agent's module pins v0.11.0 of the same Go module; the
// agent's internal/upstreamtest starts an agent on a loop-backed volume group and runs this
// test against its socket (LVMD_AGENT_SOCKET, LVMD_AGENT_VG, LVMD_AGENT_VG_SIZE).
package topolvm041

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	topolvm "github.com/topolvm/topolvm/pkg/lvmd/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func TestTopoLVM041Client(t *testing.T) {
	env := agentEnv(t, "LVMD_AGENT_SOCKET", "LVMD_AGENT_VG", "LVMD_AGENT_VG_SIZE")
	vg := env["LVMD_AGENT_VG"]
	vgSize, _ := strconv.ParseUint(env["LVMD_AGENT_VG_SIZE"], 10, 64)
	lv, vgs := dial(t, env["LVMD_AGENT_SOCKET"])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	watch, err := vgs.Watch(ctx, &topolvm.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil {
		t.Fatal(err)
	}
	items := first.GetItems()
	if len(items) != 2 || items[0].GetDeviceClass() != "ssd" || items[0].GetSizeBytes() != vgSize || items[0].GetThinPool() != nil {
		t.Fatalf("first watch message %v: want the ssd class with size_bytes %d, no thin pool", first, vgSize)
	}
	free := first.GetFreeBytes()
	next := func(what string, ok func(*topolvm.WatchResponse) bool) {
		t.Helper()
		for {
			m, err := watch.Recv()
			if err != nil {
				t.Fatalf("watch ended before %s: %v", what, err)
			}
			if ok(m) && m.GetItems()[0].GetSizeBytes() == vgSize {
				return
			}
		}
	}

	// The LogicalVolume reconciler: the LogicalVolume's UID as name, size_bytes only.
	check := func(what string, v *topolvm.LogicalVolume, name string, size int64) {
		t.Helper()
		if v.GetName() != name || v.GetSizeBytes() != size || v.GetPath() != "/dev/"+vg+"/"+name || len(v.GetAttr()) != 10 {
			t.Fatalf("%s: %v, want %s with %d bytes at /dev/%s/%s and lv_attr", what, v, name, size, vg, name)
		}
	}
	const big, small = "9a1f7c4e-1b2d-4c3e-8f4a-000000000001", "9a1f7c4e-1b2d-4c3e-8f4a-000000000002"
	res, err := lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: big, SizeBytes: 1 << 30, DeviceClass: "ssd"})
	if err != nil {
		t.Fatal(err)
	}
	check("1 GiB", res.GetVolume(), big, 1<<30)
	res, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: small, SizeBytes: 300 << 20})
	if err != nil {
		t.Fatal(err)
	}
	check("300 MiB", res.GetVolume(), small, 300<<20)
	next("the new volumes", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free-1<<30-300<<20 })

	list, err := vgs.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "ssd"})
	if err != nil || len(list.GetVolumes()) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	for _, v := range list.GetVolumes() {
		check("listed", v, v.GetName(), map[string]int64{big: 1 << 30, small: 300 << 20}[v.GetName()])
	}

	// expandLV: the answer's size_bytes becomes the LogicalVolume's status.currentSize.
	resized, err := lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: small, SizeBytes: 700 << 20, DeviceClass: "ssd"})
	if err != nil || resized.GetSizeBytes() != 700<<20 {
		t.Fatalf("resize to 700 MiB: %v %v", resized, err)
	}
	next("the resize", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free-1<<30-700<<20 })
	// After a crash the reconciler resizes to the spec's size, which may be less than the
	// volume has: the volume stays as it is and the answer says its size.
	resized, err = lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: small, SizeBytes: 300 << 20})
	if err != nil || resized.GetSizeBytes() != 700<<20 {
		t.Fatalf("resize to less: %v %v", resized, err)
	}
	_, err = lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: "missing", SizeBytes: 1 << 30})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("resize a missing volume: %v", err)
	}
	_, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: "too-big", SizeBytes: 64 << 30, DeviceClass: "hdd"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized: %v", err)
	}

	// A StorageClass's topolvm.io/lvcreate-option-class: the class's options reach lvcreate
	// (lv_attr's third character is the allocation policy).
	const opt = "9a1f7c4e-1b2d-4c3e-8f4a-000000000003"
	res, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: opt, SizeBytes: 256 << 20, LvcreateOptionClass: "contiguous"})
	if err != nil || res.GetVolume().GetAttr()[2] != 'c' {
		t.Fatalf("option class contiguous: %v %v", res, err)
	}
	_, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: "x", SizeBytes: 1 << 30, LvcreateOptionClass: "raid9"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), `lvcreate_option_class: "raid9"`) {
		t.Fatalf("unknown option class: %v", err)
	}

	for _, name := range []string{big, small, opt} {
		if _, err := lv.RemoveLV(ctx, &topolvm.RemoveLVRequest{Name: name, DeviceClass: "ssd"}); err != nil {
			t.Fatal(err)
		}
	}
	next("the removals", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free })
	if list, _ := vgs.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "ssd"}); len(list.GetVolumes()) != 0 {
		t.Fatalf("after remove %v", list)
	}
}

// agentEnv returns the variables lvmd-agent's internal/upstreamtest sets for these tests
// (the agent's socket, ...); without them the test is skipped, or fails under
// PLINTH_TEST_STRICT=1.
func agentEnv(t *testing.T, names ...string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, n := range names {
		if env[n] = os.Getenv(n); env[n] == "" {
			if os.Getenv("PLINTH_TEST_STRICT") == "1" {
				t.Fatalf("%s is unset: run lvmd-agent's internal/upstreamtest, which starts the agent", strings.Join(names, ", "))
			}
			t.Skip("SKIP: run through lvmd-agent's internal/upstreamtest, which starts the agent")
		}
	}
	return env
}

// dial connects TopoLVM's generated clients to the agent's socket until the test ends.
func dial(t *testing.T, socket string) (topolvm.LVServiceClient, topolvm.VGServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return topolvm.NewLVServiceClient(conn), topolvm.NewVGServiceClient(conn)
}
