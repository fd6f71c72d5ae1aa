package grpc

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// TestBoundsAgree: every Plinth server refuses requests over libs/platform/input/bounds
// before lvmd-agent sees them, so the table and the agent's own check name the same number.
func TestBoundsAgree(t *testing.T) {
	for _, f := range []protoreflect.FullName{"proto.CreateLVRequest.tags", "proto.CreateLVSnapshotRequest.tags"} {
		if got := bounds.Fields[f].Max; got != maxTags {
			t.Errorf("bounds.Fields[%s] is %d; lvmd-agent allows %d", f, got, maxTags)
		}
	}
}
