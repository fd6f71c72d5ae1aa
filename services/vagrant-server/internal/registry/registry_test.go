package registry

import (
	"testing"

	"github.com/hashicorp/go-version"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func TestHighestMatch(t *testing.T) {
	var boxes []*vagrant.Box
	for _, v := range []string{"0.0.0", "1.0.0", "1.2.0", "1.10.0", "2.0.0-beta1", "2.0.0"} {
		boxes = append(boxes, &vagrant.Box{Version: v})
	}
	cases := []struct{ constraint, want string }{
		{DefaultBoxConstraint, "2.0.0"},
		{"< 2", "1.10.0"}, // numeric, not lexical: 1.10 > 1.2
		{"~> 1.1", "1.10.0"},
		{"= 1.2", "1.2.0"},
		{"0.0.0", "0.0.0"}, // upstream's "> 0" and its 0.0.0 start value could never pick it
		{"> 2", ""},
		{"2.0.0-beta1", "2.0.0-beta1"},
	}
	for _, c := range cases {
		cs, err := version.NewConstraint(c.constraint)
		if err != nil {
			t.Fatal(err)
		}
		if got := highestMatch(boxes, cs).GetVersion(); got != c.want {
			t.Errorf("%q → %q, want %q", c.constraint, got, c.want)
		}
	}
}

func TestNormalizeBoxVersion(t *testing.T) {
	for in, want := range map[string]string{"": DefaultBoxVersion, "0": DefaultBoxVersion, "1.2": "1.2", "2024.01.05": "2024.01.05"} {
		if got, err := normalizeBoxVersion(in); err != nil || got != want {
			t.Errorf("%q → %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := normalizeBoxVersion("latest"); err == nil {
		t.Error("a box version that is not a version was accepted")
	}
}

func TestOverlayReplacesSetFieldsAndKeepsTheRest(t *testing.T) {
	rec := &anypb.Any{TypeUrl: "type.googleapis.com/x.Y", Value: []byte{1, 2, 3}}
	dst := &vagrant.Target{Name: "web", Uuid: "u1", Record: rec, State: vagrant.Operation_CREATED,
		Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"a": "1", "b": "2"}}}
	src := &vagrant.Target{State: vagrant.Operation_HALTED, Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"c": "3"}}}
	overlay(dst, src)
	want := &vagrant.Target{Name: "web", Uuid: "u1", Record: rec, State: vagrant.Operation_HALTED,
		Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"c": "3"}}}
	if !proto.Equal(dst, want) {
		t.Fatalf("overlay = %v, want %v (set fields replace, unset ones stay)", dst, want)
	}
	src.Metadata.Metadata["d"] = "4"
	if _, shared := dst.Metadata.Metadata["d"]; shared {
		t.Fatal("overlay shares memory with its source")
	}
}
