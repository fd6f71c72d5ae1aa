package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// successor is a later upstream version of an API whose wire our packages speak beside the
// version the facts file froze: TopoLVM's lvmd, frozen at the lz006 fork (TopoLVM v0.6) and
// spoken today as TopoLVM v0.41.0 (services/lvmd-agent's README: one socket, both wires).
type successor struct {
	// golden is the later version's FileDescriptorSet (protojson, no comments), kept equal
	// to the upstream module's registered descriptor by a test in the module that imports
	// it (services/lvmd-agent/internal/upstreamtest/topolvm041, TestDescriptorsGolden).
	golden string
	// divergences are the differences of our packages from the later contract, each with
	// the reason the wire still works; TestSuccessorContracts wants exactly these.
	divergences map[string]string
}

var successors = map[string]successor{
	"lvmd": {
		golden: "testdata/topolvm-v0.41.0-lvmd-descriptors.json",
		divergences: map[string]string{
			// CreateLVRequest: one message name, two generations on the wire. The agent reads
			// its bytes before decoding (services/lvmd-agent/internal/grpc/wire.go): size_bytes
			// or a string in field 5 is today's request, decoded as proto.OptionClassCreateLVRequest.
			"field proto.CreateLVRequest.data_source = 5: not in the upstream contract":                                   "the fork's field 5; a string there is today's lvcreate_option_class (wire.go tells them apart)",
			"field proto.CreateLVRequest.lvcreate_option_class: missing (our field data_source has its number: renamed?)": "decoded from the same bytes as proto.OptionClassCreateLVRequest.lvcreate_option_class",
			"field proto.CreateLVRequest.size_bytes: missing":                                                             "decoded from the same bytes as proto.OptionClassCreateLVRequest.size_bytes",
			// size_gb (2) is reserved upstream since v0.36.5: today's peers skip it as an
			// unknown field; the fork and TopoLVM up to v0.35 send and read it.
			"field proto.CreateLVRequest.size_gb = 2: not in the upstream contract":         "the fork's and older TopoLVM's size; reserved, never reused, upstream",
			"field proto.LogicalVolume.size_gb = 2: not in the upstream contract":           "sent beside size_bytes for the fork's and older TopoLVM's clients",
			"field proto.ResizeLVRequest.size_gb = 2: not in the upstream contract":         "the fork's and older TopoLVM's size; reserved, never reused, upstream",
			"field proto.CreateLVSnapshotRequest.size_gb = 5: not in the upstream contract": "TopoLVM v0.13 to v0.36.4's size; reserved, never reused, upstream",
			// The fork's backup method: a method today's clients never call.
			"method /proto.LVService/CreateBackup: not in the upstream contract": "the fork's method; upstream peers do not call it",
			// ResizeLV answers ResizeLVResponse's bytes (lv_service.go), which the fork's
			// clients decode as Empty with an unknown field.
			"method /proto.LVService/ResizeLV: response proto.Empty, upstream proto.ResizeLVResponse": "the agent answers a ResizeLVResponse; Empty's decoders skip its field",
		},
	},
}

// laterFacts returns the facts of api's successor, or nil when it has none.
func laterFacts(api string) (*apiFacts, error) {
	s, ok := successors[api]
	if !ok {
		return nil, nil
	}
	return descriptorFacts(api, s.golden)
}

// descriptorFacts reads a FileDescriptorSet (protojson) and extracts the facts a facts file
// holds: every service, message (map entries aside: the map field describes them) and enum.
func descriptorFacts(api, path string) (*apiFacts, error) {
	data, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		return nil, fmt.Errorf("read the descriptors of %s's successor: %w", api, err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := protojson.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	f, err := upstreamFacts(&set, func(string) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.API, f.Title = api, path
	if len(f.Services) == 0 {
		return nil, fmt.Errorf("%s declares no service", path)
	}
	return f, nil
}

// TestSuccessorContracts checks our packages against each later upstream contract: every
// difference must be one the successor lists, with its reason, and every listed one must
// still be there (a divergence fixed is taken off the list).
func TestSuccessorContracts(t *testing.T) {
	for api, s := range successors {
		t.Run(api, func(t *testing.T) {
			later, err := laterFacts(api)
			if err != nil {
				t.Fatal(err)
			}
			got := checkAPI(later, protoregistry.GlobalFiles)
			t.Logf("%s: checked %d facts of %s", api, later.items(), s.golden)
			var want []string
			for d := range s.divergences {
				want = append(want, d)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s against %s:\n  %s\nwant the listed divergences\n  %s", api, s.golden,
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
