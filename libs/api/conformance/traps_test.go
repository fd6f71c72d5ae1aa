package conformance

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The famous traps: wire facts that a proto written from the API documents
// gets wrong. TestWireConformance covers them too; this short table says why
// each matters, and is itself checked against the facts files so it cannot
// drift from them.

// methodTrap is an RPC whose gRPC path is easy to get wrong.
type methodTrap struct {
	api, service, method, input, output string
	why                                 string
}

var methodTraps = []methodTrap{
	{"cnpgi", "cnpgi.identity.v1.Postgres", "EnrichConfiguration",
		"cnpgi.identity.v1.EnrichConfigurationRequest", "cnpgi.identity.v1.EnrichConfigurationResult",
		"postgres.proto declares package cnpgi.identity.v1, not cnpgi.postgres.v1"},
	{"cnpgi", "cnpgi.wal.v1.RestoreJobHooks", "Restore",
		"cnpgi.wal.v1.RestoreRequest", "cnpgi.wal.v1.RestoreResponse",
		"restore_job.proto declares package cnpgi.wal.v1"},
	{"stats-auth", "stats.StatsService", "GetKoorCluster",
		"stats.GetKoorClusterRequest", "stats.GetKoorClusterResponse",
		"the stats service lives in package stats, not services.stats"},
	{koorV1API, "api.services.stats.v1.StatsService", "ListClusterRecommendations",
		"api.services.stats.v1.ListClusterRecommendationsRequest", "api.services.stats.v1.ListClusterRecommendationsResponse",
		"the released UIs' package is api.services.stats.v1 (the directory api/ is part of it)"},
	{"vagrant", "hashicorp.vagrant.Vagrant", "_ListJobs",
		"hashicorp.vagrant.ListJobsRequest", "hashicorp.vagrant.ListJobsResponse",
		"the method name keeps its leading underscore"},
}

// fieldTrap is a field whose number, type or presence is easy to get wrong.
// unused marks a number upstream skips (not reserved): putting a field there
// would silently change what peers decode.
type fieldTrap struct {
	api, message, field string
	number              int32
	kind, typ           string // typ only for message and enum kinds
	proto3Optional      bool
	oneof, jsonName     string // jsonName "" means not part of the trap
	why                 string
}

var fieldTraps = []fieldTrap{
	{api: "cnpgi", message: "cnpgi.wal.v1.WALArchiveRequest", field: "check_empty_wal_archive", number: 4,
		kind: "bool", proto3Optional: true, why: "explicit presence: the operator sends false as bytes 20 00, absent means an older operator"},
	{api: "cnpgi", message: "cnpgi.wal.v1.RestoreRequest", field: "check_empty_wal_archive", number: 2,
		kind: "bool", proto3Optional: true, why: "explicit presence, as in WALArchiveRequest"},
	{api: "cnpgi", message: "cnpgi.wal.v1.WALRestoreRequest", field: "mode", number: 5,
		kind: "enum", typ: "cnpgi.wal.v1.WALRestoreRequest.Mode", why: "new in cnpg-i v0.6.0; 0 means recovery"},
	{api: "cnpgi", message: "cnpgi.wal.v1.WALStatusResult", field: "additional_information", number: 4,
		kind: "message", typ: "cnpgi.wal.v1.WALStatusResult.AdditionalInformationEntry", why: "upstream skips field 3"},
	{api: "stats-auth", message: "resources.stats.MgrService", field: "updated_at", number: 4,
		kind: "message", typ: "google.protobuf.Timestamp", why: "MgrService has no field 3"},
	{api: "stats-auth", message: "resources.stats.KoorClusterSpec", field: "use_all_devices", number: 1,
		kind: "message", typ: "google.protobuf.BoolValue", why: "KoorClusterSpec booleans are wrapper messages, not bool"},
	{api: "stats-auth", message: "services.auth.LoginResponse", field: "expires", number: 2,
		kind: "message", typ: "resources.timestamp.Timestamp", why: "Koor's own Timestamp wrapper, not google.protobuf.Timestamp"},
	{api: koorV1API, message: "api.resources.ceph.v1.MonService", field: "created_since", number: 5,
		kind: "message", typ: "google.protobuf.Timestamp", why: "renumbered: the seed's created_at is 3, v1 skips 3 and 4"},
	{api: koorV1API, message: "api.resources.ceph.v1.ClusterStats", field: "status", number: 2,
		kind: "enum", typ: "api.resources.ceph.v1.ClusterHealth", why: "an enum on v1, the seed's is a string: same number, other wire type"},
	{api: koorV1API, message: "api.services.auth.v1.LogoutResponse", field: "redirect_to", number: 2,
		kind: "string", proto3Optional: true, why: "proto3 optional: explicit presence (the seed's LogoutResponse has no field 2)"},
	{api: "lvmd", message: "proto.DataSource", field: "s3", number: 2,
		kind: "message", typ: "proto.DataSource.S3", oneof: "type", why: "a oneof member at 2, and S3 is nested in DataSource"},
	{api: "lvmd", message: "proto.CreateLVRequest", field: "data_source", number: 5,
		kind: "message", typ: "proto.DataSource", why: "the backup fork's field 5; newer TopoLVM reuses 5 for lvcreate_option_class"},
	{api: "kaas", message: "cnct.kaas.api.GetClusterNodesStatusReply.MachineStatus", field: "maasSystemId", number: 4,
		kind: "string", jsonName: "maasSystemId", why: "MachineStatus skips field 3 and keeps camelCase field names"},
	{api: "kaas", message: "cnct.kaas.api.GetClusterNodesStatusReply", field: "Name", number: 1,
		kind: "string", jsonName: "Name", why: "capitalised field name, so its JSON name is Name"},
	{api: "vagrant", message: "hashicorp.vagrant.Job", field: "init_basis", number: 56,
		kind: "message", typ: "hashicorp.vagrant.Job.InitBasisOp", oneof: "operation", why: "only in the newest server.proto, not in the spec copy"},
	{api: "vagrant", message: "hashicorp.vagrant.GetBoxRequest", field: "box", number: 2,
		kind: "message", typ: "hashicorp.vagrant.sdk.Ref.Box", why: "the box reference is field 2"},
	{api: "vagrant", message: "hashicorp.vagrant.FindProjectResponse", field: "project", number: 2,
		kind: "message", typ: "hashicorp.vagrant.Project", why: "Find*Response payloads are field 2"},
}

// unusedNumbers are field numbers upstream skips without reserving them.
var unusedNumbers = []struct {
	api, message string
	number       int32
}{
	{"cnpgi", "cnpgi.wal.v1.WALStatusResult", 3},
	{"stats-auth", "resources.stats.MgrService", 3},
	{koorV1API, "api.resources.ceph.v1.MgrService", 3},
	{"kaas", "cnct.kaas.api.GetClusterNodesStatusReply.MachineStatus", 3},
}

func TestTraps(t *testing.T) {
	facts := map[string]*apiFacts{}
	for _, api := range apis {
		f, err := loadFacts(api)
		if err != nil {
			t.Fatal(err)
		}
		facts[api] = f
	}
	for _, tr := range methodTraps {
		t.Run(tr.service+"/"+tr.method, func(t *testing.T) {
			want := methodFact{Name: tr.method, Input: tr.input, Output: tr.output}
			if got, ok := factMethod(facts[tr.api], tr.service, tr.method); !ok || got != want {
				t.Fatalf("trap table disagrees with testdata/%s.json: table %+v, facts %+v", tr.api, want, got)
			}
			if got, err := ourMethod(tr.service, tr.method); err != nil || got != want {
				t.Errorf("%s\nours %+v (%v), upstream %+v", tr.why, got, err, want)
			}
		})
	}
	for _, tr := range fieldTraps {
		t.Run(tr.message+"."+tr.field, func(t *testing.T) {
			want := tr.fact()
			if got, ok := factField(facts[tr.api], tr); !ok || got != want {
				t.Fatalf("trap table disagrees with testdata/%s.json: table %+v, facts %+v", tr.api, want, got)
			}
			got, err := ourField(tr.message, tr.field)
			if err != nil {
				t.Fatalf("%s: %v", tr.why, err)
			}
			if got = tr.trim(got); got != want {
				t.Errorf("%s\nours     %+v\nupstream %+v", tr.why, got, want)
			}
		})
	}
	for _, u := range unusedNumbers {
		md, err := ourMessage(u.message)
		if err != nil {
			t.Errorf("%s: %v", u.message, err)
			continue
		}
		if fd := md.Fields().ByNumber(protoreflect.FieldNumber(u.number)); fd != nil {
			t.Errorf("%s uses field number %d (%s); upstream leaves it unused", u.message, u.number, fd.Name())
		}
	}
}

// fact is the trap as the attributes it pins down.
func (tr fieldTrap) fact() fieldFact {
	return fieldFact{Name: tr.field, Number: tr.number, Kind: tr.kind, Type: tr.typ,
		Proto3Optional: tr.proto3Optional, Oneof: tr.oneof, JSONName: tr.jsonName}
}

// trim keeps only the attributes a trap pins down.
func (tr fieldTrap) trim(f fieldFact) fieldFact {
	out := fieldFact{Name: f.Name, Number: f.Number, Kind: f.Kind, Type: f.Type,
		Proto3Optional: f.Proto3Optional, Oneof: f.Oneof}
	if tr.jsonName != "" {
		out.JSONName = f.JSONName
	}
	return out
}

func factMethod(f *apiFacts, service, method string) (methodFact, bool) {
	for _, s := range f.Services {
		for _, m := range s.Methods {
			if s.Name == service && m.Name == method {
				return m, true
			}
		}
	}
	return methodFact{}, false
}

// factField is the trap's field as the facts file has it, trimmed to what
// the trap pins down.
func factField(f *apiFacts, tr fieldTrap) (fieldFact, bool) {
	m, ok := f.message(tr.message)
	if !ok {
		return fieldFact{}, false
	}
	for _, fd := range m.Fields {
		if fd.Name == tr.field {
			return tr.trim(fd), true
		}
	}
	return fieldFact{}, false
}

func ourMethod(service, method string) (methodFact, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service).Append(protoreflect.Name(method)))
	if err != nil {
		return methodFact{}, err
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return methodFact{}, errNotA("method", d)
	}
	return methodFact{Name: method, Input: string(md.Input().FullName()), Output: string(md.Output().FullName()),
		ClientStreaming: md.IsStreamingClient(), ServerStreaming: md.IsStreamingServer()}, nil
}

func ourField(message, field string) (fieldFact, error) {
	md, err := ourMessage(message)
	if err != nil {
		return fieldFact{}, err
	}
	fd := md.Fields().ByName(protoreflect.Name(field))
	if fd == nil {
		return fieldFact{}, errNotA("field", nil)
	}
	return fieldShape(fd), nil
}

func ourMessage(name string) (protoreflect.MessageDescriptor, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, err
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, errNotA("message", d)
	}
	return md, nil
}
