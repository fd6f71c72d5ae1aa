package upstreamcnpgi

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestRoundTripDetectsMismatch proves the round trip can fail: it breaks one
// field of a copy of our WALArchiveRequest and expects the trip from the
// upstream type to report it.
func TestRoundTripDetectsMismatch(t *testing.T) {
	const msg = "cnpgi.wal.v1.WALArchiveRequest"
	tests := []struct {
		name   string
		mutate func(*descriptorpb.DescriptorProto)
		want   string
	}{
		{"field number", func(m *descriptorpb.DescriptorProto) {
			fieldNamed(t, m, "check_empty_wal_archive").Number = proto.Int32(7)
		}, "unknown fields"},
		{"explicit presence dropped", func(m *descriptorpb.DescriptorProto) {
			fd := fieldNamed(t, m, "check_empty_wal_archive")
			fd.Proto3Optional, fd.OneofIndex, m.OneofDecl = nil, nil, nil
		}, "not lossless"},
		{"json name", func(m *descriptorpb.DescriptorProto) {
			fieldNamed(t, m, "source_file_name").JsonName = proto.String("sourceFile")
		}, "JSON forms differ"},
		{"bytes read as string", func(m *descriptorpb.DescriptorProto) {
			// Not a wire-type change, so it decodes; upstream sends bytes
			// that are not valid UTF-8, which a string field rejects.
			fieldNamed(t, m, "cluster_definition").Type = descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
		}, "unmarshal"},
	}
	upType, err := protoregistry.GlobalTypes.FindMessageByName(msg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broken := mutatedOurType(t, msg, tc.mutate)
			src := upType.New()
			filler{variant: 0}.fill(src, 0) // variant 0: explicit false
			err := roundTrip(src.Interface(), broken, upType)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("round trip reported %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// mutatedOurType builds a dynamic type from a mutated copy of our descriptor
// of the named top-level message.
func mutatedOurType(t *testing.T, name protoreflect.FullName, mutate func(*descriptorpb.DescriptorProto)) protoreflect.MessageType {
	t.Helper()
	d, err := ourFiles(t).FindDescriptorByName(name)
	if err != nil {
		t.Fatal(err)
	}
	fdp := protodesc.ToFileDescriptorProto(d.ParentFile())
	for _, m := range fdp.MessageType {
		if m.GetName() == string(name.Name()) {
			mutate(m)
		}
	}
	file, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatalf("mutated descriptor does not build: %v", err)
	}
	return dynamicpb.NewMessageType(file.Messages().ByName(name.Name()))
}

func fieldNamed(t *testing.T, m *descriptorpb.DescriptorProto, name string) *descriptorpb.FieldDescriptorProto {
	t.Helper()
	for _, fd := range m.Field {
		if fd.GetName() == name {
			return fd
		}
	}
	t.Fatalf("test bug: no field %s in %s", name, m.GetName())
	return nil
}
