package access_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/plinth-dev/plinth/libs/api/access"
	_ "github.com/plinth-dev/plinth/libs/api/all"
)

// TestEveryMethodIsDeclared: every method of every service in libs/api has a kind declared
// beside its generated code, and every declaration names a method that exists. A read method
// added without its line would otherwise be a write, refused to viewers; a renamed one would
// silently lose its kind.
func TestEveryMethodIsDeclared(t *testing.T) {
	declared := access.Methods()
	seen := map[string]bool{}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(fd.Package()), "google.") {
			return true
		}
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				m := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(j).Name())
				seen[m] = true
				if _, ok := declared[m]; !ok {
					t.Errorf("%s (%s) has no kind: declare it read, write, session or user administration in the access.go beside its generated code", m, fd.Path())
				}
			}
		}
		return true
	})
	for m := range declared {
		if !seen[m] {
			t.Errorf("a kind is declared for %s, which no linked proto defines", m)
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d methods linked: libs/api/all is missing packages", len(seen))
	}
}

func TestDeclareRefusesTwice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("declaring proto.LVService again did not panic")
		}
	}()
	access.Declare("proto.LVService", map[string]access.Kind{"CreateLV": access.Read})
}
