package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// journeyLvmdCapacity: an operator creates a logical volume on lvmd-agent through the
// gateway; the agent's capacity event reaches stats, whose dashboard usage (through the
// gateway too) shows one more volume and a GiB less available; removing it gives both back.
func (s *journeySuite) journeyLvmdCapacity(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "lvmd-agent's loop-backed volume group needs root")
	}
	s.requireService(t, "lvmd-agent")
	s.requireService(t, "stats")
	token := s.login(t)
	lv := lvmdpb.NewLVServiceClient(s.gw)
	// Wait for the agent's first report (its heartbeat at start) to be in the view.
	var volumes0 int32
	var avail0 int64
	if err := eventually(30*time.Second, 200*time.Millisecond, func() (err error) {
		volumes0, avail0, err = s.statsUsage(t, token)
		if err == nil && avail0 <= 0 {
			err = fmt.Errorf("no available capacity reported yet")
		}
		return err
	}); err != nil {
		t.Fatalf("stats GetClusterStats through the gateway before the volume: %v", err)
	}

	// The console's live capacity: Watch through the gateway (a stream that stays open),
	// which sends the current free space at once and again after every change.
	watchCtx, stopWatch := context.WithCancel(withToken(callCtx(t), token))
	defer stopWatch()
	vg := lvmdpb.NewVGServiceClient(s.gw)
	watch, err := vg.Watch(watchCtx, &lvmdpb.Empty{})
	if err != nil {
		t.Fatalf("Watch through the gateway: %v", err)
	}
	first, err := watch.Recv()
	if err != nil || first.GetFreeBytes() == 0 {
		t.Fatalf("Watch's first message through the gateway: %v, %v", first, err)
	}
	anon, err := vg.Watch(callCtx(t), &lvmdpb.Empty{})
	if err == nil {
		_, err = anon.Recv()
	}
	wantCode(t, "Watch without a token", err, codes.Unauthenticated)

	name := "journeys-" + randomHex(t, 3)
	_, err = lv.CreateLV(callCtx(t), &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1})
	wantCode(t, "CreateLV without a token", err, codes.Unauthenticated)
	if _, err := lv.CreateLV(withToken(callCtx(t), token), &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1}); err != nil {
		t.Fatalf("CreateLV through the gateway: %v", err)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			_, _ = lv.RemoveLV(withToken(callCtx(t), token), &lvmdpb.RemoveLVRequest{Name: name})
		}
	})
	waitUsage := func(what string, wantVolumes int32, wantAvail int64) {
		t.Helper()
		if err := s.waitStatsUsage(t, token, 30*time.Second, wantVolumes, wantAvail); err != nil {
			t.Fatalf("stats after %s: %v; want volumes %d, available %d", what, err, wantVolumes, wantAvail)
		}
	}
	for {
		msg, err := watch.Recv()
		if err != nil {
			t.Fatalf("Watch through the gateway after CreateLV: %v", err)
		}
		if first.GetFreeBytes()-msg.GetFreeBytes() == 1<<30 {
			break
		}
	}
	stopWatch()
	waitUsage("CreateLV of 1 GiB", volumes0+1, avail0-1<<30)
	if _, err := lv.RemoveLV(withToken(callCtx(t), token), &lvmdpb.RemoveLVRequest{Name: name}); err != nil {
		t.Fatalf("RemoveLV through the gateway: %v", err)
	}
	removed = true
	waitUsage("RemoveLV", volumes0, avail0)
}

// statsUsage is stats' count of volumes and available bytes, through the gateway.
func (s *journeySuite) statsUsage(t *testing.T, token string) (volumes int32, available int64, err error) {
	resp, err := statspb.NewStatsServiceClient(s.gw).GetClusterStats(withToken(callCtx(t), token), &statspb.GetClusterStatsRequest{})
	if err != nil {
		return 0, 0, err
	}
	d := resp.GetStats().GetData()
	return d.GetVolumes(), d.GetUsage().GetAvailable(), nil
}

// waitStatsUsage waits up to timeout until stats reports wantVolumes volumes and wantAvail
// bytes available; its error says what stats said last.
func (s *journeySuite) waitStatsUsage(t *testing.T, token string, timeout time.Duration, wantVolumes int32, wantAvail int64) error {
	return eventually(timeout, 100*time.Millisecond, func() error {
		v, a, err := s.statsUsage(t, token)
		if err == nil && (v != wantVolumes || a != wantAvail) {
			err = fmt.Errorf("volumes %d, available %d", v, a)
		}
		return err
	})
}
