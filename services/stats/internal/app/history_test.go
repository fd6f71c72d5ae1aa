package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// history asks for the capacity history until cond holds.
func history(t *testing.T, c statsv1.HistoryServiceClient, req *statsv1.GetCapacityHistoryRequest, what string,
	cond func(*statsv1.GetCapacityHistoryResponse) bool) *statsv1.GetCapacityHistoryResponse {
	t.Helper()
	var last *statsv1.GetCapacityHistoryResponse
	eventually(t, 30*time.Second, what, func() (bool, string) {
		resp, err := c.GetCapacityHistory(authed(t), req)
		if err != nil {
			return false, err.Error()
		}
		last = resp
		return cond(resp), showPoints(resp)
	})
	return last
}

func showPoints(r *statsv1.GetCapacityHistoryResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples:", r.GetSamples())
	for _, p := range r.GetPoints() {
		fmt.Fprintf(&b, " %s used=%d/%d avail=%d", p.GetTime().AsTime().Format("15:04:05.000"), p.GetUsedBytes(), p.GetTotalBytes(), p.GetAvailableBytes())
	}
	return b.String()
}

// inOrder checks the points are oldest first and inside the response's window.
func inOrder(t *testing.T, r *statsv1.GetCapacityHistoryResponse) {
	t.Helper()
	start, end := r.GetStartTime().AsTime(), r.GetEndTime().AsTime()
	for i, p := range r.GetPoints() {
		at := p.GetTime().AsTime()
		if at.Before(start) || at.After(end) {
			t.Errorf("point %d at %v is outside the window %v – %v", i, at, start, end)
		}
		if i > 0 && !at.After(r.GetPoints()[i-1].GetTime().AsTime()) {
			t.Errorf("point %d at %v is not after the one before: %s", i, at, showPoints(r))
		}
	}
}

// TestCapacityHistory: the capacity the inventory reports (lvmd-agent's heartbeats, published
// as lvmd-agent publishes them) is recorded in the usage history and served by
// plinth.stats.v1.HistoryService oldest first, with the window and max_points honoured; the
// history survives a restart; bad input is InvalidArgument naming the field.
func TestCapacityHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(t, "PLINTH_STATS_HISTORY_RETENTION=2h")
	first := e.start(t, cfg)
	hc := statsv1.NewHistoryServiceClient(first.conn)
	lvmd := e.publisher(t, "lvmd-agent", events.StreamOf(&eventsv1.NodeHeartbeat{}))
	hb := func(free uint64) {
		class := &eventsv1.DeviceClassCapacity{Name: "ssd", VolumeGroup: "vg-ssd", Default: true, SizeBytes: 100 << 30, FreeBytes: free, VolumeCount: 1}
		lvmd(&eventsv1.NodeHeartbeat{Node: "store-1", Addresses: []string{"10.0.0.1"}, DeviceClasses: []*eventsv1.DeviceClassCapacity{class},
			TotalSizeBytes: class.SizeBytes, TotalFreeBytes: free, IntervalSeconds: 30})
	}

	// Bad input names the field; no token is refused as on every call.
	for _, c := range []struct {
		req   *statsv1.GetCapacityHistoryRequest
		field string
	}{
		{&statsv1.GetCapacityHistoryRequest{Window: durationpb.New(-time.Second)}, "window: "},
		{&statsv1.GetCapacityHistoryRequest{Window: durationpb.New(3 * time.Hour)}, "window: "},
		{&statsv1.GetCapacityHistoryRequest{Window: &durationpb.Duration{Seconds: 1, Nanos: -1}}, "window: "},
		{&statsv1.GetCapacityHistoryRequest{MaxPoints: 1}, "max_points: "},
		{&statsv1.GetCapacityHistoryRequest{MaxPoints: -5}, "max_points: "},
		{&statsv1.GetCapacityHistoryRequest{MaxPoints: 5001}, "max_points: "},
	} {
		_, err := hc.GetCapacityHistory(authed(t), c.req)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), c.field) {
			t.Errorf("%v: %v %q, want InvalidArgument naming %s", c.req, st.Code(), st.Message(), c.field)
		}
	}
	if _, err := hc.GetCapacityHistory(ctxT(t), &statsv1.GetCapacityHistoryRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("without a token: %v", err)
	}

	hb(75 << 30)
	r := history(t, hc, &statsv1.GetCapacityHistoryRequest{}, "the first capacity in the history", func(r *statsv1.GetCapacityHistoryResponse) bool {
		n := len(r.GetPoints())
		return n > 0 && r.GetPoints()[n-1].GetUsedBytes() == 25<<30
	})
	if p := r.GetPoints()[len(r.GetPoints())-1]; p.GetTotalBytes() != 100<<30 || p.GetAvailableBytes() != 75<<30 {
		t.Errorf("point %v; want 100 GiB total, 75 GiB available", p)
	}
	if r.GetRetention().AsDuration() != 2*time.Hour || r.GetEndTime().AsTime().Sub(r.GetStartTime().AsTime()) != 2*time.Hour {
		t.Errorf("no window: %v – %v, retention %v; want the whole retention", r.GetStartTime().AsTime(), r.GetEndTime().AsTime(), r.GetRetention().AsDuration())
	}
	hb(50 << 30)
	r = history(t, hc, &statsv1.GetCapacityHistoryRequest{}, "the new usage, after the first", func(r *statsv1.GetCapacityHistoryResponse) bool {
		n := len(r.GetPoints())
		return n >= 3 && r.GetPoints()[n-1].GetUsedBytes() == 50<<30
	})
	inOrder(t, r)
	if r.GetPoints()[0].GetUsedBytes() > 25<<30 {
		t.Errorf("the oldest point is not the first usage: %s", showPoints(r))
	}
	firstAt := r.GetPoints()[0].GetTime().AsTime()

	// A sample at least every second (PLINTH_STATS_HISTORY_INTERVAL=1s): wait for a few more,
	// then ask for two points and for a short window.
	r = history(t, hc, &statsv1.GetCapacityHistoryRequest{}, "six samples", func(r *statsv1.GetCapacityHistoryResponse) bool { return r.GetSamples() >= 6 })
	all := len(r.GetPoints())
	if int(r.GetSamples()) != all {
		t.Errorf("%d samples but %d points below the default max of 500", r.GetSamples(), all)
	}
	two, err := hc.GetCapacityHistory(authed(t), &statsv1.GetCapacityHistoryRequest{MaxPoints: 2})
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, two)
	if len(two.GetPoints()) != 2 || two.GetSamples() < 6 || !two.GetPoints()[0].GetTime().AsTime().Equal(firstAt) ||
		two.GetPoints()[1].GetUsedBytes() != 50<<30 {
		t.Errorf("max 2: %s; want the first and the newest of %d samples", showPoints(two), two.GetSamples())
	}
	short, err := hc.GetCapacityHistory(authed(t), &statsv1.GetCapacityHistoryRequest{Window: durationpb.New(2500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, short)
	if n := len(short.GetPoints()); n == 0 || n >= all || short.GetEndTime().AsTime().Sub(short.GetStartTime().AsTime()) != 2500*time.Millisecond {
		t.Errorf("a 2.5 s window: %s; want some but fewer than all %d", showPoints(short), all)
	}

	// After a restart the history is still there (written to schema stats), and grows on.
	first.stop()
	second := e.start(t, cfg)
	hc = statsv1.NewHistoryServiceClient(second.conn)
	restarted := time.Now()
	r = history(t, hc, &statsv1.GetCapacityHistoryRequest{}, "samples from before and after the restart", func(r *statsv1.GetCapacityHistoryResponse) bool {
		n := len(r.GetPoints())
		return n > all && r.GetPoints()[n-1].GetTime().AsTime().After(restarted)
	})
	inOrder(t, r)
	if !r.GetPoints()[0].GetTime().AsTime().Equal(firstAt) {
		t.Errorf("after the restart the history starts at %v, want %v", r.GetPoints()[0].GetTime().AsTime(), firstAt)
	}
}
