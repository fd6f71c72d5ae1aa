package topolvm041

import (
	"os"
	"path/filepath"
	"testing"

	topolvm "github.com/topolvm/topolvm/pkg/lvmd/proto"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// golden is TopoLVM v0.41.0's lvmd wire contract as libs/api's conformance tests read it: the
// descriptor of pkg/lvmd/proto/lvmd.proto, without comments (facts, no upstream source).
const golden = "../../../../../libs/api/conformance/testdata/topolvm-v0.41.0-lvmd-descriptors.json"

// TestDescriptorsGolden keeps the golden file equal to the descriptor TopoLVM v0.41.0's
// generated package registers; PLINTH_UPDATE_GOLDEN=1 rewrites it.
func TestDescriptorsGolden(t *testing.T) {
	fd := protodesc.ToFileDescriptorProto(topolvm.File_pkg_lvmd_proto_lvmd_proto)
	fd.SourceCodeInfo = nil
	upstream := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}}
	path := filepath.FromSlash(golden)
	if os.Getenv("PLINTH_UPDATE_GOLDEN") != "" {
		data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(upstream)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (create it with PLINTH_UPDATE_GOLDEN=1): %v", golden, err)
	}
	var got descriptorpb.FileDescriptorSet
	if err := protojson.Unmarshal(data, &got); err != nil {
		t.Fatalf("decode %s: %v", golden, err)
	}
	if !proto.Equal(&got, upstream) {
		t.Fatalf("%s differs from TopoLVM v0.41.0's registered descriptor: run this test with PLINTH_UPDATE_GOLDEN=1", golden)
	}
}
