package jobqueue_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/latency"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// BenchmarkEndToEnd measures jobs/second through queue → assign → ack → complete with 1, 4
// and 16 runners, and the time from the start of Queue to the runner's Assign returning
// (p50/p99). A producer keeps at most two jobs per runner outstanding, so runners stay busy
// and latencies include a short wait in the queue. Runners wake by NOTIFY (polling is set to
// a minute). The pool has runners+4 connections, as a replica serving that many would.
//
//	go test -run '^$' -bench EndToEnd -benchtime 2000x ./services/vagrant-server/internal/jobqueue/
func BenchmarkEndToEnd(b *testing.B) {
	for _, runners := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("runners=%d", runners), func(b *testing.B) { benchEndToEnd(b, runners) })
	}
}

func benchEndToEnd(b *testing.B, runners int) {
	db := testenv.DB(b)
	u, err := url.Parse(db.URL)
	if err != nil {
		b.Fatal(err)
	}
	qs := u.Query()
	qs.Set("pool_max_conns", strconv.Itoa(runners+4))
	u.RawQuery = qs.Encode()
	q := openReplica(b, u.String(), jobqueue.Options{PollInterval: time.Minute}).q

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	window := make(chan struct{}, 2*runners)
	finished := make(chan struct{})
	var mu sync.Mutex
	latencies := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	for n := range runners {
		id := fmt.Sprintf("bench-%d", n)
		register(b, q, id, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				job, err := q.Assign(ctx, id)
				if errors.Is(err, context.Canceled) {
					return
				}
				assigned := time.Now()
				if err == nil {
					_, err = q.Ack(ctx, job.GetId(), id)
				}
				if err == nil {
					err = q.Complete(ctx, job.GetId(), id, nil)
				}
				if err != nil {
					b.Errorf("%s: %v", id, err)
					return
				}
				queuedAt, _ := strconv.ParseInt(job.GetLabels()["queued_at"], 10, 64)
				mu.Lock()
				latencies = append(latencies, assigned.Sub(time.Unix(0, queuedAt)))
				if len(latencies) == b.N {
					close(finished)
				}
				mu.Unlock()
				<-window
			}
		}()
	}

	b.ResetTimer()
	start := time.Now()
	for range b.N {
		window <- struct{}{}
		job := noopJob(anyRunner())
		job.Labels = map[string]string{"queued_at": strconv.FormatInt(time.Now().UnixNano(), 10)}
		if _, err := q.Queue(ctx, job, 0, "token:bench"); err != nil {
			b.Fatal(err)
		}
	}
	<-finished
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()

	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latency.Percentile(latencies, p).Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(pct(0.50), "p50-assign-ms")
	b.ReportMetric(pct(0.99), "p99-assign-ms")
}
