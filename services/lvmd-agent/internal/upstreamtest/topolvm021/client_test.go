// Package topolvm021 drives lvmd-agent with TopoLVM v0.21.0's own generated lvmd client
// (github.com/topolvm/topolvm/lvmd/proto at v0.21.0): upstream's wire between the fork's and
// today's — CreateLVRequest field 5 is lvcreate_option_class (a string, since v0.18) while
// sizes are still size_gb (size_bytes came in v0.23). It is a module of its own because the
// agent's module pins v0.11.0 of the same Go module; the agent's internal/upstreamtest starts
// an agent on a loop-backed volume group and runs this test against its socket
// (LVMD_AGENT_SOCKET, LVMD_AGENT_VG_SIZE), then checks in lvm that the option class's
// options reached lvcreate (the volume OPTION_CLASS_VOLUME stays for that).
package topolvm021

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	topolvm "github.com/topolvm/topolvm/lvmd/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// OptionClassVolume is made with the option class "contiguous" and left for the caller.
const OptionClassVolume = "5b2e8d1c-7f3a-4e6b-9c0d-000000000021"

func TestTopoLVM021Client(t *testing.T) {
	socket := os.Getenv("LVMD_AGENT_SOCKET")
	vgSize, _ := strconv.ParseUint(os.Getenv("LVMD_AGENT_VG_SIZE"), 10, 64)
	if socket == "" || vgSize == 0 {
		if os.Getenv("PLINTH_TEST_STRICT") == "1" {
			t.Fatal("LVMD_AGENT_SOCKET and LVMD_AGENT_VG_SIZE are unset: run lvmd-agent's internal/upstreamtest, which starts the agent")
		}
		t.Skip("SKIP: run through lvmd-agent's internal/upstreamtest, which starts the agent")
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lv, vgs := topolvm.NewLVServiceClient(conn), topolvm.NewVGServiceClient(conn)
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
	if items := first.GetItems(); len(items) != 2 || items[0].GetSizeBytes() != vgSize || items[0].GetThinPool() != nil {
		t.Fatalf("first watch message %v: want size_bytes %d and no thin pool", first, vgSize)
	}
	free := first.GetFreeBytes()
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

	// The LogicalVolume reconciler of v0.18 to v0.22: size_gb, and the StorageClass's option
	// class in field 5 (none: not sent).
	const plain = "5b2e8d1c-7f3a-4e6b-9c0d-000000000001"
	res, err := lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: plain, SizeGb: 1, DeviceClass: "ssd"})
	if err != nil || res.GetVolume().GetSizeGb() != 1 || res.GetVolume().GetName() != plain {
		t.Fatalf("create 1 GiB: %v %v", res, err)
	}
	res, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: OptionClassVolume, SizeGb: 1, LvcreateOptionClass: "contiguous"})
	if err != nil || res.GetVolume().GetSizeGb() != 1 {
		t.Fatalf("create with the option class contiguous: %v %v", res, err)
	}
	_, err = lv.CreateLV(ctx, &topolvm.CreateLVRequest{Name: "x", SizeGb: 1, LvcreateOptionClass: "raid9"})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), `lvcreate_option_class: "raid9"`) {
		t.Fatalf("unknown option class: %v", err)
	}
	next("the new volumes", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free-2<<30 })

	if _, err := lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: plain, SizeGb: 2, DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := lv.ResizeLV(ctx, &topolvm.ResizeLVRequest{Name: plain, SizeGb: 1}); status.Code(err) != codes.OutOfRange {
		t.Fatalf("shrink in GiB: %v", err)
	}
	list, err := vgs.GetLVList(ctx, &topolvm.GetLVListRequest{DeviceClass: "ssd"})
	if err != nil || len(list.GetVolumes()) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	for _, v := range list.GetVolumes() {
		if want := map[string]uint64{plain: 2, OptionClassVolume: 1}[v.GetName()]; v.GetSizeGb() != want {
			t.Fatalf("listed %v, want %d GiB", v, want)
		}
	}
	if _, err := lv.RemoveLV(ctx, &topolvm.RemoveLVRequest{Name: plain, DeviceClass: "ssd"}); err != nil {
		t.Fatal(err)
	}
	next("the removal", func(m *topolvm.WatchResponse) bool { return m.GetFreeBytes() == free-1<<30 })
}
