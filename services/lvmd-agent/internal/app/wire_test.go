package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// rawMessage is a message whose bytes are exactly raw: what a client of neither generation
// may send.
func rawMessage(raw []byte) *lvmdpb.Empty {
	m := &lvmdpb.Empty{}
	m.ProtoReflect().SetUnknown(raw)
	return m
}

// TestBothWiresOnOneSocket sends CreateLV and ResizeLV in the fork's shape and in upstream
// TopoLVM's (v0.18's option class, v0.23's size_bytes beside size_gb, v0.36.5's size_bytes
// alone) to one agent on a real volume group, and requests that fit neither.
func TestBothWiresOnOneSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30})
	f, err := os.OpenFile(filepath.Join(e.dir, "lvmd.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("lvcreate-option-classes:\n  - name: contiguous\n    options: [\"--alloc=contiguous\"]\n")
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	const createLV, resizeLV = "/proto.LVService/CreateLV", "/proto.LVService/ResizeLV"
	create := func(req proto.Message) (*lvmdpb.LogicalVolume, error) {
		t.Helper()
		var res lvmdpb.CreateLVResponse
		err := a.conn.Invoke(ctx, createLV, req, &res)
		return res.GetVolume(), err
	}
	vg := e.vgs[0].Name

	// Upstream since v0.36.5: size_bytes alone, sub-GiB, answered in bytes with path and attr.
	v, err := create(&lvmdpb.OptionClassCreateLVRequest{Name: "small", SizeBytes: 300 << 20})
	if err != nil || v.GetSizeBytes() != 300<<20 || v.GetSizeGb() != 0 || v.GetPath() != "/dev/"+vg+"/small" || len(v.GetAttr()) < 3 {
		t.Fatalf("300 MiB: %v %v", v, err)
	}
	// Bytes round up to the extent size (4 MiB), as lvcreate does; the same request again is
	// the same volume.
	for range 2 {
		v, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "odd", SizeBytes: 300<<20 + 1})
		if err != nil || v.GetSizeBytes() != 304<<20 {
			t.Fatalf("300 MiB + 1: %v %v", v, err)
		}
	}
	// v0.23 to v0.36.4: size_gb (rounded down) beside size_bytes.
	if v, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "both", SizeGb: 1, SizeBytes: 1<<30 + 300<<20}); err != nil || v.GetSizeBytes() != 1<<30+300<<20 || v.GetSizeGb() != 1 {
		t.Fatalf("both sizes: %v %v", v, err)
	}
	_, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "x", SizeGb: 2, SizeBytes: 1 << 30})
	wantCode(t, err, codes.InvalidArgument, "size_gb, size_bytes: disagree", "size_gb=2", "size_bytes=1073741824")
	_, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "x", SizeBytes: -1})
	wantCode(t, err, codes.InvalidArgument, "size_bytes: must be positive")

	// v0.18's option class in field 5: its options reach lvcreate (attr's third character is
	// the allocation policy); an unknown one is refused naming it.
	if v, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "contig", SizeBytes: 1 << 30, LvcreateOptionClass: "contiguous"}); err != nil || v.GetAttr()[2] != 'c' {
		t.Fatalf("option class: %v %v", v, err)
	}
	_, err = create(&lvmdpb.OptionClassCreateLVRequest{Name: "x", SizeGb: 1, LvcreateOptionClass: "raid9"})
	wantCode(t, err, codes.InvalidArgument, `lvcreate_option_class: "raid9"`)

	// The fork: field 5 is a DataSource, decoded as one.
	_, err = create(&lvmdpb.CreateLVRequest{Name: "restore", SizeGb: 1, DataSource: &lvmdpb.DataSource{SynchronousRestore: true}})
	wantCode(t, err, codes.InvalidArgument, "data_source.s3: is required")

	// Fitting neither wire.
	ds, _ := proto.Marshal(&lvmdpb.CreateLVRequest{Name: "x", DataSource: &lvmdpb.DataSource{SynchronousRestore: true}})
	for _, tt := range []struct {
		raw  []byte
		want string
	}{
		{protowire.AppendVarint(protowire.AppendTag(ds, 6, protowire.VarintType), 1<<30), "size_bytes (field 6)"},
		{protowire.AppendString(protowire.AppendTag(ds, 5, protowire.BytesType), "contiguous"), "field 5 holds both"},
		{protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "1"), "field 2 (size_gb) has wire type 2"},
		{protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), 1), "field 5 (data_source or lvcreate_option_class)"},
		{[]byte{0x0a, 0x05, 'a'}, "cannot parse the request as proto.CreateLVRequest"},
		{protowire.AppendString(protowire.AppendTag(nil, 5, protowire.BytesType), "\xff"), "lvcreate_option_class: must be valid UTF-8"},
	} {
		_, err = create(rawMessage(tt.raw))
		wantCode(t, err, codes.InvalidArgument, tt.want)
	}

	// ResizeLV: size_bytes asks for at least that much and is answered with the size;
	// size_gb asks for exactly that, as lvmd did.
	resize := func(req *lvmdpb.ResizeLVRequest) (int64, error) {
		t.Helper()
		var res lvmdpb.ResizeLVResponse
		err := a.conn.Invoke(ctx, resizeLV, req, &res)
		return res.GetSizeBytes(), err
	}
	if size, err := resize(&lvmdpb.ResizeLVRequest{Name: "small", SizeBytes: 500<<20 + 1}); err != nil || size != 504<<20 {
		t.Fatalf("grow in bytes: %d %v", size, err)
	}
	if size, err := resize(&lvmdpb.ResizeLVRequest{Name: "small", SizeBytes: 100 << 20}); err != nil || size != 504<<20 {
		t.Fatalf("at least less than it has: %d %v", size, err)
	}
	_, err = resize(&lvmdpb.ResizeLVRequest{Name: "both", SizeGb: 1})
	wantCode(t, err, codes.OutOfRange, "shrinking")
	_, err = resize(&lvmdpb.ResizeLVRequest{Name: "both", SizeGb: 1, SizeBytes: 3 << 30})
	wantCode(t, err, codes.InvalidArgument, "size_gb, size_bytes: disagree")
	// The fork's client reads the answer as Empty.
	if _, err := a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "odd", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}

	list, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, v := range list.GetVolumes() {
		sizes[v.GetName()] = v.GetSizeBytes()
		if v.GetSizeGb() != uint64(v.GetSizeBytes())>>30 || v.GetPath() != "/dev/"+vg+"/"+v.GetName() || v.GetAttr() == "" {
			t.Errorf("listed %v", v)
		}
	}
	if len(sizes) != 4 || sizes["small"] != 504<<20 || sizes["odd"] != 1<<30 || sizes["contig"] != 1<<30 {
		t.Fatalf("list %v", sizes)
	}
	info, err := e.vgs[0].Runner.VG(ctx, vg)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := a.vg.Watch(ctx, &lvmdpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || len(first.GetItems()) != 1 || first.GetItems()[0].GetSizeBytes() != info.Size || first.GetItems()[0].GetFreeBytes() != info.Free {
		t.Fatalf("watch %v %v; volume group %+v", first, err, info)
	}
}
