package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/latency"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// latencies collects per-call durations from parallel benchmark goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) { l.mu.Lock(); l.d = append(l.d, d...); l.mu.Unlock() }

func (l *latencies) report(b *testing.B) {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(latency.Percentile(l.d, p).Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// createClusters creates n clusters from 16 goroutines and waits until all are RUNNING; it
// returns their names and how long that took.
func createClusters(b *testing.B, e *env, c kaaspb.ClusterClient, prefix string, n int, workers int32) ([]string, time.Duration) {
	b.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	began := time.Now()
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				req := &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13", ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}}
				if workers > 0 {
					req.WorkerNodePools = []*kaaspb.MachineSpec{{Name: "w", Count: workers}}
				}
				if _, err := c.CreateCluster(e.ctx(b), req); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, name := range names {
		jobs <- name
	}
	close(jobs)
	wg.Wait()
	for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		list, err := c.GetClusterList(e.ctx(b), &kaaspb.GetClusterListMsg{})
		if err != nil {
			b.Fatal(err)
		}
		running := 0
		for _, cl := range list.GetClusters() {
			if cl.GetStatus() == kaaspb.ClusterStatus_RUNNING && slices.Contains(names, cl.GetName()) {
				running++
			}
		}
		if running == n {
			return names, time.Since(began)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters RUNNING", running, n)
		}
	}
}

// BenchmarkAPIWith1000Clusters measures GetCluster (status and kubeconfig of one cluster) and
// GetClusterList (all 1,000) from parallel clients while kaas keeps 1,000 MAAS clusters
// (its reconciler resyncing them in the background).
func BenchmarkAPIWith1000Clusters(b *testing.B) {
	e := newEnv(b, maastest.Options{DeployTime: 10 * time.Millisecond, ReleaseTime: 10 * time.Millisecond})
	e.maas.Add(1000, "standard")
	// One admin makes every cluster: no per-user quota (0), or the 11th would be refused.
	c := e.start(b, e.config(b, func(c *app.Config) {
		c.Workers, c.Poll, c.Resync, c.MaxClustersPerUser, c.MaxMachinesPerUser = 16, 200*time.Millisecond, time.Minute, 0, 0
	})).client
	names, took := createClusters(b, e, c, "api", 1000, 0)
	// Printed, not logged: the setup is a figure of its own (benchmarks hide passing logs).
	fmt.Printf("setup: 1,000 clusters (one MAAS machine each) RUNNING %v after their CreateCluster calls began\n", took.Round(time.Millisecond))
	b.Run("GetCluster", func(b *testing.B) {
		measure(b, e, func(ctx context.Context) error {
			_, err := c.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: names[rand.IntN(len(names))]})
			return err
		})
	})
	b.Run("GetClusterList", func(b *testing.B) {
		measure(b, e, func(ctx context.Context) error {
			r, err := c.GetClusterList(ctx, &kaaspb.GetClusterListMsg{})
			if err == nil && len(r.GetClusters()) != 1000 {
				err = fmt.Errorf("%d clusters listed", len(r.GetClusters()))
			}
			return err
		})
	})
}

// measure runs call from parallel goroutines and reports its latency percentiles.
func measure(b *testing.B, e *env, call func(context.Context) error) {
	var all latencies
	b.RunParallel(func(pb *testing.PB) {
		ctx := e.ctx(b)
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			err := call(ctx)
			mine = append(mine, time.Since(start))
			if err != nil {
				b.Error(err)
				return
			}
		}
		all.add(mine)
	})
	all.report(b)
}

// BenchmarkReconcile100Clusters is the time from 100 CreateCluster calls (each a
// control-plane machine and two workers: 300 MAAS machines, 100 ms to deploy each) to all
// 100 RUNNING, with one kaas and its default 8 reconciler workers. Run with -benchtime=1x.
func BenchmarkReconcile100Clusters(b *testing.B) {
	for i := range b.N {
		e := newEnv(b, maastest.Options{DeployTime: 100 * time.Millisecond, ReleaseTime: 10 * time.Millisecond})
		e.maas.Add(300, "standard")
		c := e.start(b, e.config(b, func(c *app.Config) {
			c.Workers, c.Poll, c.Resync, c.MaxClustersPerUser, c.MaxMachinesPerUser = 8, 200*time.Millisecond, time.Minute, 0, 0
		})).client
		_, took := createClusters(b, e, c, fmt.Sprintf("rec%d", i), 100, 2)
		b.ReportMetric(took.Seconds(), "s-to-100-RUNNING")
		b.ReportMetric(300/took.Seconds(), "machines/s")
		b.ReportMetric(float64(e.maas.Requests())/100, "MAAS-requests/cluster")
	}
}
