package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// cnpgiGolden holds the descriptors our CNPG-I packages register. The round
// trip against the upstream cnpg-i Go types (package upstreamcnpgi) runs in
// a test binary that cannot link our generated packages (both register the
// same full names and protobuf-go panics at init), so it reads our
// descriptors from this file; this test keeps it equal to what our packages
// register.
const cnpgiGolden = "testdata/plinth-cnpgi-descriptors.json"

// updateEnv, when set, makes TestCNPGIDescriptorsGolden rewrite the golden
// file instead of comparing.
const updateEnv = "PLINTH_UPDATE_GOLDEN"

func TestCNPGIDescriptorsGolden(t *testing.T) {
	facts, err := loadFacts("cnpgi")
	if err != nil {
		t.Fatal(err)
	}
	ours := fileSet(t, facts.Packages)
	if os.Getenv(updateEnv) != "" {
		data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(ours)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(cnpgiGolden), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(filepath.FromSlash(cnpgiGolden))
	if err != nil {
		t.Fatalf("read %s (create it with %s=1 go test ./conformance -run %s): %v", cnpgiGolden, updateEnv, t.Name(), err)
	}
	var golden descriptorpb.FileDescriptorSet
	if err := protojson.Unmarshal(data, &golden); err != nil {
		t.Fatalf("decode %s: %v", cnpgiGolden, err)
	}
	// Compared as messages, not bytes: protojson output is deliberately
	// not byte-stable.
	if !proto.Equal(&golden, ours) {
		t.Fatalf("%s is stale: the CNPG-I protos changed. Check the change, then run %s=1 go test ./conformance -run %s",
			cnpgiGolden, updateEnv, t.Name())
	}
}

// fileSet is every registered file declaring one of the packages, with its
// imports, sorted by path.
func fileSet(t *testing.T, packages []string) *descriptorpb.FileDescriptorSet {
	t.Helper()
	seen := map[string]bool{}
	var files []protoreflect.FileDescriptor
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		files = append(files, fd)
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
	}
	for _, pkg := range packages {
		protoregistry.GlobalFiles.RangeFilesByPackage(protoreflect.FullName(pkg), func(fd protoreflect.FileDescriptor) bool {
			add(fd)
			return true
		})
	}
	if len(files) == 0 {
		t.Fatalf("no registered files for packages %v: is imports_test.go linking them?", packages)
	}
	slices.SortFunc(files, func(a, b protoreflect.FileDescriptor) int {
		switch {
		case a.Path() < b.Path():
			return -1
		case a.Path() > b.Path():
			return 1
		}
		return 0
	})
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range files {
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	return set
}
