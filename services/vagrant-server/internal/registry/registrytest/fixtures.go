package registrytest

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// foreignAny packs a type this build does not know (the Ruby side's Args.Symbol, which the
// minimal sdk subset leaves out): it must come back byte for byte all the same.
func foreignAny(payload string) *anypb.Any {
	return &anypb.Any{
		TypeUrl: "type.googleapis.com/hashicorp.vagrant.sdk.Args.Symbol",
		Value:   append([]byte{0x0a, byte(len(payload))}, payload...),
	}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err) // test fixture of known, marshalable types
	}
	return a
}

// hash is an Args.Hash of Any keys and values, as Vagrant's Ruby side sends.
func hash(kv ...string) *sdk.Args_Hash {
	h := &sdk.Args_Hash{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Entries = append(h.Entries, &sdk.Args_HashEntry{Key: mustAny(wrapperspb.String(kv[i])), Value: foreignAny(kv[i+1])})
	}
	return h
}

func vagrantfile(label string) *vagrant.Vagrantfile {
	return &vagrant.Vagrantfile{
		Unfinalized: hash("box", label), Finalized: hash("box", label, "memory", "2048"),
		Raw: []byte("Vagrant.configure('2') { |c| c.vm.box = '" + label + "' }"), Format: vagrant.Vagrantfile_RUBY,
		Path: &sdk.Args_Path{Path: "/work/" + label + "/Vagrantfile"},
	}
}

func metadata(kv ...string) *sdk.Args_MetadataSet {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &sdk.Args_MetadataSet{Metadata: m}
}

func newBasis(name string) *vagrant.Basis {
	return &vagrant.Basis{
		ResourceId: id(), Name: name, Path: "/home/" + name + "/.vagrant.d",
		Metadata: metadata("owner", name), Configuration: vagrantfile(name), RemoteEnabled: true,
		DataSource: &vagrant.Job_DataSource{Source: &vagrant.Job_DataSource_Git{Git: &vagrant.Job_Git{Url: "https://example.com/" + name + ".git"}}},
	}
}

func newProject(basisID, name string) *vagrant.Project {
	return &vagrant.Project{
		ResourceId: id(), Name: name, Path: "/work/" + name, Basis: &sdk.Ref_Basis{ResourceId: basisID},
		Metadata: metadata("team", "infra"), Configuration: vagrantfile(name),
	}
}

func newTarget(projectID, name string) *vagrant.Target {
	machine := &vagrant.Target_Machine{Id: "vm-" + name, Uid: "1000",
		Box:   &vagrant.Box{Name: "ubuntu/jammy64", Version: "1.0.0", Provider: "netns"},
		State: &sdk.Args_Target_Machine_State{Id: "running", ShortDescription: "running"}}
	return &vagrant.Target{
		ResourceId: id(), Name: name, Project: &sdk.Ref_Project{ResourceId: projectID},
		Datadir:  &sdk.Args_DataDir_Target{DataDir: "/work/.vagrant/machines/" + name, CacheDir: "/tmp/c", ConfigDir: "/tmp/cfg", TempDir: "/tmp"},
		State:    vagrant.Operation_CREATED,
		Metadata: metadata("role", name),
		Configuration: &sdk.Args_ConfigData{Source: &sdk.Args_Class{Name: "Vagrant::Config::V2::Root"},
			Data: hash("vm.hostname", name)},
		Record:   mustAny(machine),
		Provider: "netns",
	}
}

func newBox(name, version, provider string) *vagrant.Box {
	meta, err := structpb.NewStruct(map[string]any{"name": name, "versions": []any{map[string]any{"version": version}}})
	if err != nil {
		panic(err)
	}
	return &vagrant.Box{
		ResourceId: id(), Name: name, Version: version, Provider: provider,
		Directory: "/boxes/" + name + "/" + version + "/" + provider, Metadata: meta,
		MetadataUrl: "https://vagrantcloud.com/" + name, LastUpdate: timestamppb.New(time.Now().Truncate(time.Microsecond)), // Postgres keeps microseconds
	}
}
