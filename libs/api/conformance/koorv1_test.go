package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Koor's released wire (data-control-center v0.1.0-alpha to v0.6.0, api.services.*.v1) is a
// second contract of the stats and auth services beside the seed's (stats-auth.json): a
// facts file of its own, testdata/koor-v1.json, checked by TestWireConformance like the five.
//
// The facts are derived from upstream's sources, never written by hand. To remake them:
//
//	m=$(mirror of github.com/koor-tech/data-control-center); d=$(mktemp -d)
//	for f in api/services/auth/v1/auth.proto api/services/stats/v1/stats.proto \
//	         api/resources/ceph/v1/stats.proto api/resources/ceph/v1/recommendations.proto \
//	         api/resources/k8s/v1/resources.proto; do
//	  mkdir -p $d/$(dirname $f); git -C $m show v0.6.0:$f > $d/$f; done
//	python3 libs/api/conformance/testdata/strip-validate.py $d   # drop validate.rules options
//	printf 'version: v2\n' > $d/buf.yaml && (cd $d && buf build -o image.binpb)
//	PLINTH_KOOR_V1_IMAGE=$d/image.binpb go test ./conformance -run TestKoorV1FactsFromUpstream
const (
	koorV1API      = "koor-v1"
	koorV1ImageEnv = "PLINTH_KOOR_V1_IMAGE"
)

// TestKoorV1FactsFromUpstream writes testdata/koor-v1.json from a buf image of upstream's
// v0.6.0 protos when PLINTH_KOOR_V1_IMAGE names one; otherwise it checks that the facts file
// was made this way (its sources name the tag, every fact has an upstream file).
func TestKoorV1FactsFromUpstream(t *testing.T) {
	path := filepath.Join("testdata", koorV1API+".json")
	image := os.Getenv(koorV1ImageEnv)
	if image == "" {
		f, err := loadFacts(koorV1API)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(f.Sources, " "), "v0.6.0") {
			t.Errorf("%s: sources do not name the v0.6.0 tag", path)
		}
		for _, m := range f.Messages {
			if _, ok := f.packageOf(m.File); !ok {
				t.Errorf("%s: message %s from unlisted file %s", path, m.Name, m.File)
			}
		}
		return
	}
	data, err := os.ReadFile(image)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		t.Fatalf("%s is not a buf image: %v", image, err)
	}
	f, err := upstreamFacts(&set, func(path string) bool { return strings.HasPrefix(path, "api/") })
	if err != nil {
		t.Fatal(err)
	}
	f.API = koorV1API
	f.Title = "Koor data-control-center v0.6.0: api.services.auth.v1.AuthService and api.services.stats.v1.StatsService, with api.resources.ceph.v1 and api.resources.k8s.v1"
	f.Sources = []string{
		"github.com/koor-tech/data-control-center at tag v0.6.0 (2024-02, its last release; every release from v0.1.0-alpha speaks these packages): " +
			"api/services/auth/v1/auth.proto, api/services/stats/v1/stats.proto, api/resources/ceph/v1/stats.proto, api/resources/ceph/v1/recommendations.proto, api/resources/k8s/v1/resources.proto",
		"protoc-gen-validate field options (validate.rules) were dropped before compiling with buf: validation rules are not part of the wire",
	}
	f.Remarks = []string{
		"the renumbered seed: MonService.created_since is 5 and updated_since 6, MgrService.updated_since 6, OsdService's times 6 and 7",
		"ClusterStats.status is the enum ClusterHealth; Objects.size and the IOPS are int64, not display strings; MonService.quorum is repeated",
		"ResourceStatus and ReliabilityScore start with UNSPECIFIED = 0 (UNKNOWN is 1); NodeInfo's addresses and age, ResourceInfo.version and LogoutResponse.redirect_to have explicit presence",
		"LoginResponse.expires is a plain google.protobuf.Timestamp; api.resources.k8s.v1.Resource(s) belong to Koor's resource editor, which no method of these two services reaches",
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d facts", path, f.items())
}

// upstreamFacts extracts the facts of the files keep selects from a compiled set: their
// services, messages and enums, each message and enum marked reachable when a method of the
// set's services reaches it.
func upstreamFacts(set *descriptorpb.FileDescriptorSet, keep func(path string) bool) (*apiFacts, error) {
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, err
	}
	reached := map[protoreflect.FullName]bool{}
	var reach func(m protoreflect.MessageDescriptor)
	reach = func(m protoreflect.MessageDescriptor) {
		if reached[m.FullName()] {
			return
		}
		reached[m.FullName()] = true
		for i := 0; i < m.Fields().Len(); i++ {
			fd := m.Fields().Get(i)
			if e := fd.Enum(); e != nil {
				reached[e.FullName()] = true
			}
			if sub := fd.Message(); sub != nil {
				reach(sub)
			}
		}
	}
	f := &apiFacts{}
	var messages func(file string, ms protoreflect.MessageDescriptors)
	enums := func(file string, es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			e := es.Get(i)
			ef := enumFact{Name: string(e.FullName()), File: file}
			for j := 0; j < e.Values().Len(); j++ {
				v := e.Values().Get(j)
				ef.Values = append(ef.Values, valueFact{Name: string(v.Name()), Number: int32(v.Number())})
			}
			f.Enums = append(f.Enums, ef)
		}
	}
	messages = func(file string, ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			mf := messageFact{Name: string(m.FullName()), File: file}
			for j := 0; j < m.Fields().Len(); j++ {
				mf.Fields = append(mf.Fields, fieldShape(m.Fields().Get(j)))
			}
			f.Messages = append(f.Messages, mf)
			messages(file, m.Messages())
			enums(file, m.Enums())
		}
	}
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !keep(fd.Path()) {
			return true
		}
		file := fd.Path()
		f.Packages = append(f.Packages, string(fd.Package()))
		f.Files = append(f.Files, fileFact{Path: file, Package: string(fd.Package()), Syntax: fd.Syntax().String()})
		for i := 0; i < fd.Services().Len(); i++ {
			s := fd.Services().Get(i)
			sf := serviceFact{Name: string(s.FullName()), File: file}
			for j := 0; j < s.Methods().Len(); j++ {
				md := s.Methods().Get(j)
				sf.Methods = append(sf.Methods, methodShape(md))
				reach(md.Input())
				reach(md.Output())
			}
			f.Services = append(f.Services, sf)
		}
		messages(file, fd.Messages())
		enums(file, fd.Enums())
		return true
	})
	for i := range f.Messages {
		f.Messages[i].Reachable = reached[protoreflect.FullName(f.Messages[i].Name)]
	}
	for i := range f.Enums {
		f.Enums[i].Reachable = reached[protoreflect.FullName(f.Enums[i].Name)]
	}
	slices.Sort(f.Packages)
	f.Packages = slices.Compact(f.Packages)
	slices.SortFunc(f.Files, func(a, b fileFact) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(f.Services, func(a, b serviceFact) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(f.Messages, func(a, b messageFact) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(f.Enums, func(a, b enumFact) int { return strings.Compare(a.Name, b.Name) })
	return f, nil
}
