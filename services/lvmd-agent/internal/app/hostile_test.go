package app_test

import (
	"testing"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestHostileClient probes every lvmd RPC (and the jobs API) with huge and NUL strings in each field, unknown
// fields, garbage and oversized metadata and cut streams: each is refused with a documented
// code and a short message, nothing is created, and the agent keeps answering.
func TestHostileClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	a := e.start(t, e.config(t))
	hostiletest.Run(t, hostiletest.Target{Conn: a.conn, Services: []string{"proto.LVService", "proto.VGService", "plinth.lvmd.v1.JobService", "plinth.lvmd.v1.VolumeService"}})
	l, err := a.vg.GetLVList(ctxT(t), &lvmdpb.GetLVListRequest{})
	if err != nil || len(l.GetVolumes()) != 0 {
		t.Fatalf("probes created volumes: %v %v", l, err)
	}
}
