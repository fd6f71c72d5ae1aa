package grpc

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// TestBoundsAgree: every Plinth server refuses requests over libs/platform/input/bounds
// before lvmd-agent sees them, so the table and the agent's own check name the same number.
func TestBoundsAgree(t *testing.T) {
	if got := bounds.Fields["proto.CreateLVRequest.tags"].Max; got != maxTags {
		t.Errorf("bounds.Fields[proto.CreateLVRequest.tags] is %d; lvmd-agent allows %d", got, maxTags)
	}
}
