package app_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// watcher reads one Watch stream in the background.
type watcher struct {
	msgs chan *lvmdpb.WatchResponse
	end  chan error
}

func watch(t *testing.T, ctx context.Context, a *agent) *watcher {
	t.Helper()
	st, err := a.vg.Watch(ctx, &lvmdpb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{msgs: make(chan *lvmdpb.WatchResponse, 100), end: make(chan error, 1)}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				w.end <- err
				return
			}
			w.msgs <- m
		}
	}()
	return w
}

// until reads messages until one satisfies ok.
func (w *watcher) until(t *testing.T, what string, ok func(*lvmdpb.WatchResponse) bool) *lvmdpb.WatchResponse {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-w.msgs:
			if ok(m) {
				return m
			}
		case err := <-w.end:
			t.Fatalf("watch ended before %s: %v", what, err)
		case <-timeout:
			t.Fatalf("no watch message showed %s", what)
		}
	}
}

func item(m *lvmdpb.WatchResponse, class string) uint64 {
	for _, it := range m.GetItems() {
		if it.GetDeviceClass() == class {
			return it.GetFreeBytes()
		}
	}
	return ^uint64(0)
}

func TestWatchSendsAtSubscribeAfterChangesAndPeriodically(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{classes: 2, size: 4 << 30, spareGB: 1})
	a := e.start(t, e.config(t, func(c *app.Config) { c.WatchInterval = time.Second }))
	ctx := ctxT(t)
	hdd, err := e.vgs[1].Runner.VG(ctx, e.vgs[1].Name)
	if err != nil {
		t.Fatal(err)
	}
	ssdFree, err := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{DeviceClass: "ssd"})
	if err != nil {
		t.Fatal(err)
	}
	w1, w2 := watch(t, ctx, a), watch(t, ctx, a)
	for _, w := range []*watcher{w1, w2} {
		first := w.until(t, "the first message", func(*lvmdpb.WatchResponse) bool { return true })
		if len(first.GetItems()) != 2 || first.GetFreeBytes() != ssdFree.GetFreeBytes() || item(first, "ssd") != ssdFree.GetFreeBytes() {
			t.Fatalf("first message %v; want both classes, default free %d", first, ssdFree.GetFreeBytes())
		}
		// Watch subtracts the spare like GetFreeBytes (lvmd v0.6 did not).
		if item(first, "hdd") != hdd.Free-1<<30 {
			t.Fatalf("hdd item %d, want %d minus the spare", item(first, "hdd"), hdd.Free)
		}
	}

	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "v1", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*watcher{w1, w2} {
		w.until(t, "the new volume", func(m *lvmdpb.WatchResponse) bool {
			return m.GetFreeBytes() == ssdFree.GetFreeBytes()-1<<30
		})
	}
	// A volume made by hand, outside the agent, reaches the watchers by the poll.
	e.vgs[1].Lvm(t, "lvcreate", "-n", "byhand", "-L", "1g", "-W", "y", "-y", e.vgs[1].Name)
	w1.until(t, "the volume made by hand", func(m *lvmdpb.WatchResponse) bool { return item(m, "hdd") == hdd.Free-2<<30 })
	// Nothing changes now; the interval still resends.
	drain(w1)
	w1.until(t, "a periodic resend", func(*lvmdpb.WatchResponse) bool { return true })

	// Shutdown ends the streams (the graceful stop does not wait for them to its deadline).
	a.stop()
	select {
	case err := <-w1.end:
		if !errors.Is(err, io.EOF) {
			t.Logf("stream ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream outlived the agent")
	}
}

func drain(w *watcher) {
	for {
		select {
		case <-w.msgs:
		default:
			return
		}
	}
}
