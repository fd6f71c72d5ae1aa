package conformance

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/descriptorpb"
)

// The helpers below find parts of a FileDescriptorProto by name for the
// mutation tests; a name they cannot find is a bug in the test.

// message finds a message by its dotted path within the file, e.g.
// "PluginCapability.Service".
func message(t *testing.T, f *descriptorpb.FileDescriptorProto, path string) *descriptorpb.DescriptorProto {
	t.Helper()
	msgs := f.MessageType
	var found *descriptorpb.DescriptorProto
	for _, name := range strings.Split(path, ".") {
		found = nil
		for _, m := range msgs {
			if m.GetName() == name {
				found = m
				break
			}
		}
		if found == nil {
			t.Fatalf("test bug: no message %s in %s", path, f.GetName())
		}
		msgs = found.NestedType
	}
	return found
}

func field(t *testing.T, f *descriptorpb.FileDescriptorProto, msg, name string) *descriptorpb.FieldDescriptorProto {
	t.Helper()
	for _, fd := range message(t, f, msg).Field {
		if fd.GetName() == name {
			return fd
		}
	}
	t.Fatalf("test bug: no field %s.%s", msg, name)
	return nil
}

func enumValue(t *testing.T, f *descriptorpb.FileDescriptorProto, msg, enum, name string) *descriptorpb.EnumValueDescriptorProto {
	t.Helper()
	for _, e := range message(t, f, msg).EnumType {
		for _, v := range e.Value {
			if e.GetName() == enum && v.GetName() == name {
				return v
			}
		}
	}
	t.Fatalf("test bug: no enum value %s.%s.%s", msg, enum, name)
	return nil
}

func method(t *testing.T, f *descriptorpb.FileDescriptorProto, service, name string) *descriptorpb.MethodDescriptorProto {
	t.Helper()
	for _, s := range f.Service {
		for _, m := range s.Method {
			if s.GetName() == service && m.GetName() == name {
				return m
			}
		}
	}
	t.Fatalf("test bug: no method %s.%s", service, name)
	return nil
}
