package conformance

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// TestCheckerFindsEachDifference proves the conformance test can fail: it
// breaks one thing in a copy of one of our files and expects the checker to
// report exactly that, and nothing else.
func TestCheckerFindsEachDifference(t *testing.T) {
	// Each case names the file to break by a definition declared in it.
	const (
		wal      = "cnpgi.wal.v1.WAL"
		restore  = "cnpgi.wal.v1.RestoreJobHooks"
		identity = "cnpgi.identity.v1.Identity"
		postgres = "cnpgi.identity.v1.Postgres"
		stats    = "resources.stats.KoorClusterSpec"
		lvmd     = "proto.DataSource"
		kaas     = "cnct.kaas.api.Cluster"
		vagrant  = "hashicorp.vagrant.Vagrant"
	)
	tests := []struct {
		name   string
		api    string
		anchor protoreflect.FullName
		mutate func(*testing.T, *descriptorpb.FileDescriptorProto)
		want   []string
	}{
		{"unchanged copy", "cnpgi", wal, func(*testing.T, *descriptorpb.FileDescriptorProto) {}, nil},
		{"field number", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALArchiveRequest", "check_empty_wal_archive").Number = proto.Int32(7)
		}, []string{"field cnpgi.wal.v1.WALArchiveRequest.check_empty_wal_archive: number 7, upstream 4"}},
		{"optional dropped", "cnpgi", restore, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			fd := field(t, f, "RestoreRequest", "check_empty_wal_archive")
			fd.Proto3Optional, fd.OneofIndex = nil, nil
			message(t, f, "RestoreRequest").OneofDecl = nil
		}, []string{
			"field cnpgi.wal.v1.RestoreRequest.check_empty_wal_archive: presence implicit, upstream explicit",
			"field cnpgi.wal.v1.RestoreRequest.check_empty_wal_archive: proto3 optional false, upstream true",
		}},
		{"json name", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALRestoreRequest", "source_wal_name").JsonName = proto.String("sourceWALName")
		}, []string{"field cnpgi.wal.v1.WALRestoreRequest.source_wal_name: json_name sourceWALName, upstream sourceWalName"}},
		{"scalar kind", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALStatusRequest", "cluster_definition").Type = descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
		}, []string{"field cnpgi.wal.v1.WALStatusRequest.cluster_definition: kind string, upstream bytes"}},
		{"message type", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALCapabilitiesResult", "capabilities").TypeName = proto.String(".cnpgi.wal.v1.WALStatusResult")
		}, []string{"field cnpgi.wal.v1.WALCapabilitiesResult.capabilities: type cnpgi.wal.v1.WALStatusResult, upstream cnpgi.wal.v1.WALCapability"}},
		{"label", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALCapabilitiesResult", "capabilities").Label = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
		}, []string{"field cnpgi.wal.v1.WALCapabilitiesResult.capabilities: label optional, upstream repeated",
			"field cnpgi.wal.v1.WALCapabilitiesResult.capabilities: presence explicit, upstream implicit"}},
		{"map value", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "WALArchiveRequest.ParametersEntry", "value").Type = descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum()
		}, []string{"field cnpgi.wal.v1.WALArchiveRequest.parameters: map value bytes, upstream string"}},
		{"oneof dropped", "cnpgi", identity, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "PluginCapability", "service").OneofIndex = nil
			message(t, f, "PluginCapability").OneofDecl = nil
		}, []string{`field cnpgi.identity.v1.PluginCapability.service: oneof "", upstream type`}},
		{"field renamed", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			fd := field(t, f, "WALRestoreRequest", "mode")
			fd.Name, fd.JsonName = proto.String("restore_mode"), proto.String("restoreMode")
		}, []string{
			"field cnpgi.wal.v1.WALRestoreRequest.mode: missing (our field restore_mode has its number: renamed?)",
			"field cnpgi.wal.v1.WALRestoreRequest.restore_mode = 5: not in the upstream contract",
		}},
		{"extra field", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			m := message(t, f, "WALArchiveResult")
			m.Field = append(m.Field, &descriptorpb.FieldDescriptorProto{Name: proto.String("archived"), JsonName: proto.String("archived"),
				Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()})
		}, []string{"field cnpgi.wal.v1.WALArchiveResult.archived = 1: not in the upstream contract"}},
		{"enum value", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			enumValue(t, f, "WALRestoreRequest", "Mode", "MODE_REWIND").Number = proto.Int32(3)
		}, []string{"enum value cnpgi.wal.v1.WALRestoreRequest.Mode.MODE_REWIND: number 3, upstream 2"}},
		{"method renamed", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			method(t, f, "WAL", "Archive").Name = proto.String("ArchiveWAL")
		}, []string{"method /cnpgi.wal.v1.WAL/Archive: missing", "method /cnpgi.wal.v1.WAL/ArchiveWAL: not in the upstream contract"}},
		{"streaming", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			method(t, f, "WAL", "Status").ServerStreaming = proto.Bool(true)
		}, []string{"method /cnpgi.wal.v1.WAL/Status: server-streaming, upstream unary"}},
		{"request type", "cnpgi", wal, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			method(t, f, "WAL", "Status").InputType = proto.String(".cnpgi.wal.v1.WALArchiveRequest")
		}, []string{"method /cnpgi.wal.v1.WAL/Status: request cnpgi.wal.v1.WALArchiveRequest, upstream cnpgi.wal.v1.WALStatusRequest"}},
		{"service in its own package", "cnpgi", postgres, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			// The mistake the upstream layout invites: a Postgres service
			// named after its file.
			f.Service[0].Name = proto.String("PostgresService")
		}, []string{"service cnpgi.identity.v1.Postgres: missing"}},
		{"wrapper made a bool", "stats-auth", stats, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			fd := field(t, f, "KoorClusterSpec", "use_all_devices")
			fd.Type, fd.TypeName = descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), nil
		}, []string{
			"field resources.stats.KoorClusterSpec.use_all_devices: kind bool, upstream message",
			"field resources.stats.KoorClusterSpec.use_all_devices: presence implicit, upstream explicit",
			`field resources.stats.KoorClusterSpec.use_all_devices: type "", upstream google.protobuf.BoolValue`,
		}},
		{"oneof member moved out", "lvmd", lvmd, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "DataSource", "s3").OneofIndex = nil
			message(t, f, "DataSource").OneofDecl = nil
		}, []string{`field proto.DataSource.s3: oneof "", upstream type`}},
		{"a later version's field with another shape", "lvmd", lvmd, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			// TopoLVM v0.41.0 has LogicalVolume.size_bytes as int64: only that shape may be added.
			field(t, f, "LogicalVolume", "size_bytes").Type = descriptorpb.FieldDescriptorProto_TYPE_UINT64.Enum()
		}, []string{"field proto.LogicalVolume.size_bytes = 6: not in the upstream contract"}},
		{"skipped number used", "kaas", kaas, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			field(t, f, "GetClusterNodesStatusReply.MachineStatus", "maasSystemId").Number = proto.Int32(3)
		}, []string{"field cnct.kaas.api.GetClusterNodesStatusReply.MachineStatus.maasSystemId: number 3, upstream 4"}},
		{"underscore dropped", "vagrant", vagrant, func(t *testing.T, f *descriptorpb.FileDescriptorProto) {
			method(t, f, "Vagrant", "_ListJobs").Name = proto.String("ListJobs")
		}, []string{"method /hashicorp.vagrant.Vagrant/ListJobs: not in the upstream contract", "method /hashicorp.vagrant.Vagrant/_ListJobs: missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			facts, err := loadFacts(tc.api)
			if err != nil {
				t.Fatal(err)
			}
			got := checkAPI(facts, registryWith(t, tc.anchor, tc.mutate))
			if !slices.Equal(got, tc.want) {
				t.Errorf("checker reported\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// registryWith is a private registry holding every file our packages
// register, except that the file declaring anchor is replaced by a mutated
// copy.
func registryWith(t *testing.T, anchor protoreflect.FullName, mutate func(*testing.T, *descriptorpb.FileDescriptorProto)) *protoregistry.Files {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(anchor)
	if err != nil {
		t.Fatalf("%s is not registered by our generated packages: %v", anchor, err)
	}
	orig := d.ParentFile()
	path := orig.Path()
	fdp := protodesc.ToFileDescriptorProto(orig)
	mutate(t, fdp)
	changed, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatalf("mutated %s does not build: %v", path, err)
	}
	reg := new(protoregistry.Files)
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if f.Path() != path {
			err = reg.RegisterFile(f)
		}
		return err == nil
	})
	if err == nil {
		err = reg.RegisterFile(changed)
	}
	if err != nil {
		t.Fatalf("build the private registry: %v", err)
	}
	return reg
}
