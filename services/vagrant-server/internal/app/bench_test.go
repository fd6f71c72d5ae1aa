package app_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/latency"
)

// BenchmarkGRPCEndToEnd measures whole jobs through the gRPC API, as a Vagrant client and
// runners see them: QueueJob → (RunnerJobStream) assignment → ack → one line of output →
// complete, with 1, 4 and 16 runners on one server. It reports jobs/s and the time from the
// start of QueueJob to the runner receiving the assignment (p50/p99). A producer keeps at
// most two jobs per runner outstanding, so runners stay busy and latencies include a short
// wait in the queue. The server logs at info, as in production, and its pool has
// runners+8 connections.
//
//	go test -run '^$' -bench GRPCEndToEnd -benchtime 1000x ./services/vagrant-server/internal/app/
func BenchmarkGRPCEndToEnd(b *testing.B) {
	for _, runners := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("runners=%d", runners), func(b *testing.B) { benchGRPC(b, runners) })
	}
}

func benchGRPC(b *testing.B, runners int) {
	e := newEnv(b)
	e.logLevel = "info"
	u, err := url.Parse(e.dbURL)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(runners+8))
	u.RawQuery = q.Encode()
	e.dbURL = u.String()
	c := e.start(b)
	tok := e.bootstrap(b, c)
	ctx := callCtx(tok)

	window := make(chan struct{}, 2*runners)
	finished := make(chan struct{})
	var mu sync.Mutex
	latencies := make([]time.Duration, 0, b.N)
	work, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for i := range runners {
		r := startRunner(b, c, tok, fmt.Sprintf("bench-%d", i), false)
		wg.Go(func() {
			err := r.work(work, func(job *vagrant.Job, assigned time.Time) {
				queuedAt, _ := strconv.ParseInt(job.GetLabels()["queued_at"], 10, 64)
				mu.Lock()
				latencies = append(latencies, assigned.Sub(time.Unix(0, queuedAt)))
				if len(latencies) == b.N {
					close(finished)
				}
				mu.Unlock()
				<-window
			})
			if err != nil {
				b.Error(err)
			}
		})
	}

	b.ResetTimer()
	start := time.Now()
	for range b.N {
		window <- struct{}{}
		job := noopJob()
		job.Labels = map[string]string{"queued_at": strconv.FormatInt(time.Now().UnixNano(), 10)}
		if _, err := c.QueueJob(ctx, &vagrant.QueueJobRequest{Job: job}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		done := len(latencies)
		mu.Unlock()
		b.Fatalf("stalled: %d of %d jobs done", done, b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	wg.Wait()

	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latency.Percentile(latencies, p).Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(pct(0.50), "p50-assign-ms")
	b.ReportMetric(pct(0.99), "p99-assign-ms")
}
