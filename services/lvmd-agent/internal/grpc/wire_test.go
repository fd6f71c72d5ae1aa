package grpc

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// TestDecodeCreateLV is the two-wire rule as a table: which generation each request is read
// as, and the refusals of requests that fit neither.
func TestDecodeCreateLV(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	restore := &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: &lvmdpb.DataSource_S3{Path: "b/p"}}}
	fork := marshal(&lvmdpb.CreateLVRequest{Name: "v", SizeGb: 2, Tags: []string{"t"}, DeviceClass: "ssd", DataSource: restore})
	for _, tt := range []struct {
		name string
		raw  []byte
		want createLVCall
		err  string
	}{
		{name: "the fork with a restore", raw: fork,
			want: createLVCall{name: "v", sizeGB: 2, tags: []string{"t"}, deviceClass: "ssd", dataSource: restore}},
		{name: "the fork with an empty DataSource", raw: marshal(&lvmdpb.CreateLVRequest{Name: "v", SizeGb: 1, DataSource: &lvmdpb.DataSource{}}),
			want: createLVCall{name: "v", sizeGB: 1, dataSource: &lvmdpb.DataSource{}}},
		{name: "a synchronous restore starts with 0x08", raw: marshal(&lvmdpb.CreateLVRequest{Name: "v", SizeGb: 1, DataSource: &lvmdpb.DataSource{SynchronousRestore: true}}),
			want: createLVCall{name: "v", sizeGB: 1, dataSource: &lvmdpb.DataSource{SynchronousRestore: true}}},
		{name: "v0.5 to v0.17: no field 5", raw: marshal(&lvmdpb.CreateLVRequest{Name: "v", SizeGb: 1}), want: createLVCall{name: "v", sizeGB: 1}},
		{name: "v0.18 to v0.22: option class and size_gb", raw: marshal(&lvmdpb.OptionClassCreateLVRequest{Name: "v", SizeGb: 1, LvcreateOptionClass: "raid1"}),
			want: createLVCall{name: "v", sizeGB: 1, optionClass: "raid1"}},
		{name: "v0.23 to v0.36.4: both sizes", raw: marshal(&lvmdpb.OptionClassCreateLVRequest{Name: "v", SizeGb: 1, SizeBytes: 1<<30 + 5}),
			want: createLVCall{name: "v", sizeGB: 1, sizeBytes: 1<<30 + 5}},
		{name: "v0.36.5 and later: size_bytes only", raw: marshal(&lvmdpb.OptionClassCreateLVRequest{Name: "v", SizeBytes: 300 << 20, LvcreateOptionClass: "x"}),
			want: createLVCall{name: "v", sizeBytes: 300 << 20, optionClass: "x"}},
		{name: "size_bytes beside a DataSource", raw: protowire.AppendVarint(protowire.AppendTag(fork, 6, protowire.VarintType), 1),
			err: "size_bytes (field 6) is upstream TopoLVM's"},
		{name: "field 5 both ways", raw: protowire.AppendString(protowire.AppendTag(fork, 5, protowire.BytesType), "raid1"),
			err: "field 5 holds both"},
		{name: "size_gb as bytes", raw: protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "1"),
			err: "field 2 (size_gb) has wire type 2 where both send 0"},
		{name: "name as a number", raw: protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1),
			err: "field 1 (name) has wire type 0"},
		{name: "a cut field", raw: []byte{0x0a, 0x05, 'a'}, err: "field 1 is cut short"},
		{name: "not a tag", raw: []byte{0x80}, err: "not a protobuf message"},
		{name: "invalid UTF-8 in the option class", raw: protowire.AppendString(protowire.AppendTag(nil, 5, protowire.BytesType), "a\xff"),
			err: "lvcreate_option_class: must be valid UTF-8"},
		{name: "invalid UTF-8 in a tag", raw: protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "\xff"),
			err: "tags: must be valid UTF-8"},
		{name: "a DataSource that is not one", raw: protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), []byte{0x12, 0x09}),
			err: "data_source: not a DataSource message"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCreateLV(tt.raw)
			if tt.err != "" {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.err) {
					t.Fatalf("err %v, want InvalidArgument with %q", err, tt.err)
				}
				return
			}
			if err != nil || got.name != tt.want.name || got.sizeGB != tt.want.sizeGB || got.sizeBytes != tt.want.sizeBytes ||
				got.optionClass != tt.want.optionClass || got.deviceClass != tt.want.deviceClass ||
				strings.Join(got.tags, ",") != strings.Join(tt.want.tags, ",") || !proto.Equal(got.dataSource, tt.want.dataSource) ||
				(got.dataSource == nil) != (tt.want.dataSource == nil) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestSizeOf(t *testing.T) {
	for _, tt := range []struct {
		gb   uint64
		b    int64
		want uint64
		err  string
	}{
		{gb: 2, want: 2 << 30},
		{b: 300 << 20, want: 300 << 20},
		{gb: 1, b: 1<<30 + 300<<20, want: 1<<30 + 300<<20}, // rounded down, as v0.23 sends it
		{gb: 2, b: 1<<30 + 300<<20, want: 1<<30 + 300<<20}, // rounded up
		{gb: 3, b: 1<<30 + 300<<20, err: "size_gb, size_bytes: disagree"},
		{gb: 1, b: 300 << 20, want: 300 << 20},
		{err: "size_gb: must be at least 1"},
		{b: -1, err: "size_bytes: must be positive"},
		{b: 1 << 62, want: 1 << 62},
		{b: 1<<62 + 1, err: "size_bytes: 4611686018427387905 is more than"},
	} {
		got, err := sizeOf(tt.gb, tt.b, false)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("sizeOf(%d, %d) = %d, %v; want %q", tt.gb, tt.b, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("sizeOf(%d, %d) = %d, %v; want %d", tt.gb, tt.b, got, err, tt.want)
		}
	}
}
