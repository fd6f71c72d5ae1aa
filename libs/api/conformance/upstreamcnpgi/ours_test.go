package upstreamcnpgi

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The upstream Go types, registered in protoregistry.GlobalFiles and
	// GlobalTypes: they are the only CNPG-I types linked into this binary.
	_ "github.com/cloudnative-pg/cnpg-i/pkg/backup"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/identity"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/lifecycle"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/metrics"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/operator"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/postgres"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/reconciler"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/restore/job"
	_ "github.com/cloudnative-pg/cnpg-i/pkg/wal"
)

// cnpgiPackages are the proto packages of CNPG-I.
var cnpgiPackages = []protoreflect.FullName{
	"cnpgi.backup.v1", "cnpgi.identity.v1", "cnpgi.metrics.v1", "cnpgi.operator.v1",
	"cnpgi.operator_lifecycle.v1", "cnpgi.reconciler.v1", "cnpgi.wal.v1",
}

// ourFiles loads our CNPG-I descriptors into a private registry.
func ourFiles(t *testing.T) *protoregistry.Files {
	t.Helper()
	path := filepath.Join("..", "testdata", "plinth-cnpgi-descriptors.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read our descriptors (package conformance writes them): %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := protojson.Unmarshal(data, &set); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatalf("build our descriptors from %s: %v", path, err)
	}
	return files
}

// definitions lists the full names of the messages (map entries excluded)
// and enums declared in the CNPG-I packages of a registry, sorted.
func definitions(files *protoregistry.Files) (messages []protoreflect.MessageDescriptor, enums []protoreflect.EnumDescriptor) {
	var addMessages func(protoreflect.MessageDescriptors)
	addEnums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			enums = append(enums, es.Get(i))
		}
	}
	addMessages = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			if md.IsMapEntry() {
				continue
			}
			messages = append(messages, md)
			addMessages(md.Messages())
			addEnums(md.Enums())
		}
	}
	for _, pkg := range cnpgiPackages {
		files.RangeFilesByPackage(pkg, func(fd protoreflect.FileDescriptor) bool {
			addMessages(fd.Messages())
			addEnums(fd.Enums())
			return true
		})
	}
	sort.Slice(messages, func(i, j int) bool { return messages[i].FullName() < messages[j].FullName() })
	sort.Slice(enums, func(i, j int) bool { return enums[i].FullName() < enums[j].FullName() })
	return messages, enums
}

// names joins descriptor full names for comparison and messages.
func names[D protoreflect.Descriptor](ds []D) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.FullName())
	}
	return strings.Join(out, "\n")
}
