package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scripted is a source whose answers the test sets.
type scripted[T any] struct {
	mu    sync.Mutex
	value *T
	err   error
	calls int
}

func (s *scripted[T]) set(v *T, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value, s.err = v, err
}

func (s *scripted[T]) read(context.Context) (*T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.value, s.err
}

// running runs c until the test ends.
func running(t *testing.T, c *Collector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCollectorKeepsTheLastReportOfAFailingSource(t *testing.T) {
	ceph := &scripted[Ceph]{}
	ceph.set(nil, errors.New("dial tcp 10.0.0.1:8443: connection refused"))
	c, err := NewCollector(Config{Ceph: ceph.read, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	waitFor(t, "the first failed refresh", func() bool { return c.Sources()[0].Failures > 0 })
	_, err = c.View()
	var noData *NoDataError
	if !errors.As(err, &noData) || !errors.Is(err, ErrNoData) {
		t.Fatalf("before any answer: %v, want a NoDataError", err)
	}
	if strings.Contains(err.Error(), "10.0.0.1") {
		t.Fatalf("the client-facing error names an internal address: %v", err)
	}

	ceph.set(&Ceph{FSID: "f1", Health: HealthOK}, nil)
	waitFor(t, "the first report", func() bool { v, err := c.View(); return err == nil && v.Summary.FSID == "f1" })

	ceph.set(nil, errors.New("401 twice"))
	waitFor(t, "the failure to show", func() bool { return c.Sources()[0].Err != nil })
	v, err := c.View()
	if err != nil || v.Summary.FSID != "f1" || v.Summary.Health != HealthOK {
		t.Fatalf("a failing source must keep its last report: %+v %v", v, err)
	}
	st := v.Sources[0]
	if st.Err == nil || st.At.IsZero() || !strings.Contains(st.String(), "serving the report of") {
		t.Fatalf("the failure is not visible: %q", st.String())
	}
	if up := metric(t, c, "plinth_stats_source_up"); up != 0 {
		t.Fatalf("source_up %v while failing", up)
	}
	if n := metric(t, c, "plinth_stats_source_failures_total"); n < 2 {
		t.Fatalf("failures_total %v after two runs of failures", n)
	}
	ceph.set(&Ceph{FSID: "f2", Health: HealthWarn}, nil)
	waitFor(t, "the recovery", func() bool { v, _ := c.View(); return v.Summary.FSID == "f2" })
	if up := metric(t, c, "plinth_stats_source_up"); up != 1 {
		t.Fatalf("source_up %v after recovery", up)
	}
}

// metric is the value of the first series of one metric family c exports.
func metric(t *testing.T, c *Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestCollectorNeedsASource(t *testing.T) {
	if _, err := NewCollector(Config{}); err == nil {
		t.Fatal("a collector without sources must be refused")
	}
}

func TestCollectorWakesOnKubeChange(t *testing.T) {
	kube := &scripted[Kube]{}
	kube.set(&Kube{}, nil)
	wake := make(chan struct{}, 1)
	c, err := NewCollector(Config{Kube: kube.read, KubeChanged: wake, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	waitFor(t, "the first refresh", func() bool { _, err := c.View(); return err == nil })
	kube.set(&Kube{Nodes: []Node{{Name: "n1", Status: StatusReady}}}, nil)
	wake <- struct{}{}
	waitFor(t, "the change to show without waiting the hour", func() bool { v, _ := c.View(); return len(v.Nodes) == 1 })
}
