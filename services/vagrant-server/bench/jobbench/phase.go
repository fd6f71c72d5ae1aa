package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// load decides when jobs are queued.
type load struct {
	name  string
	jobs  int
	conc  int           // burst: concurrent callers queueing as fast as they can
	every time.Duration // steady: one job per interval, each from its own goroutine
}

func burst(jobs, conc int) load { return load{name: "burst", jobs: jobs, conc: conc} }

func steady(rate int, d time.Duration) load {
	return load{name: "steady", jobs: int(d.Seconds() * float64(rate)), every: time.Second / time.Duration(rate)}
}

// phaseResult is what one phase measured.
type phaseResult struct {
	jobs          int
	elapsed       time.Duration // first QueueJob → last job finished
	drain         time.Duration // last job finished → every event published
	assign, ack   []time.Duration
	stats         dbStats // deltas over the phase (and the settling wait after it)
	cpu           cpuSnapshot
	statsInterval time.Duration // how long the commit counters ran, for the idle correction
}

func (p phaseResult) jobsPerSecond() float64 { return float64(p.jobs) / p.elapsed.Seconds() }

func (p *phaseResult) subtractIdle(idle idleRates) {
	secs := p.statsInterval.Seconds()
	p.stats.commits -= int64(idle.commitsPerSec * secs)
	p.stats.walSyncs -= int64(idle.walSyncsPerSec * secs)
}

type queued struct {
	id   string
	sent time.Time
}

// phase queues l's jobs, waits until all of them finished and their events are published,
// and reads what it cost.
func (m *measurement) phase(ctx context.Context, l load) (phaseResult, error) {
	before, err := m.readStats(ctx)
	if err != nil {
		return phaseResult{}, err
	}
	cpu0 := m.cpu()
	statsFrom := time.Now()
	fmt.Fprintf(os.Stderr, "%s %s, %d runners: %s phase, %d jobs\n", time.Now().Format(time.TimeOnly), m.build.label, m.n, l.name, l.jobs)
	jobs, start, err := m.queue(ctx, l)
	if err != nil {
		return phaseResult{}, err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	// Every job of the phase is queued and earlier phases' jobs are finished: the phase is
	// over when no job is unfinished. The partial indexes make this cheap, so polling does
	// not compete with the server for Postgres.
	if err := waitFor(ctx, 5*time.Minute, "the jobs to finish", func() (bool, error) {
		var unfinished int
		err := m.db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE state IN (1, 2, 3)`).Scan(&unfinished)
		return err == nil && unfinished == 0, m.server.exited()
	}); err != nil {
		return phaseResult{}, err
	}
	res := phaseResult{jobs: len(jobs)}
	var failed int
	var last time.Time
	if err := m.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state <> 5), max(complete_time) FROM jobs WHERE id = ANY($1)`, ids).
		Scan(&failed, &last); err != nil {
		return res, err
	}
	if failed > 0 {
		return res, fmt.Errorf("%d of %d jobs did not succeed: %w", failed, len(ids), errJobsFailed)
	}
	res.elapsed = last.Sub(start)
	if err := m.latencies(ctx, jobs, &res); err != nil {
		return res, err
	}
	finished := time.Now()
	if err := waitFor(ctx, 2*time.Minute, "the outbox to drain", func() (bool, error) {
		var unsent int
		err := m.db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent)
		return err == nil && unsent == 0, nil
	}); err != nil {
		return res, err
	}
	res.drain = time.Since(finished)
	cpu1 := m.cpu()
	res.cpu = cpuSnapshot{server: cpu1.server - cpu0.server, runners: cpu1.runners - cpu0.runners,
		postgres: cpu1.postgres - cpu0.postgres, self: cpu1.self - cpu0.self}
	xmax, err := m.xmax(ctx)
	if err != nil {
		return res, err
	}
	// Backends report commit counts when idle for a while: let them.
	time.Sleep(statsSettle)
	after, err := m.readStats(ctx)
	if err != nil {
		return res, err
	}
	after.xmax = xmax
	res.stats = after.minus(before)
	res.statsInterval = time.Since(statsFrom)
	return res, nil
}

// queue sends l's jobs and returns them with the time the first was sent.
func (m *measurement) queue(ctx context.Context, l load) ([]queued, time.Time, error) {
	jobs := make([]queued, l.jobs)
	call := m.call(ctx)
	send := func(i int) error {
		sent := time.Now()
		resp, err := m.client.QueueJob(call, &vagrant.QueueJobRequest{Job: &vagrant.Job{
			TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}},
			Operation:    &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}},
		}})
		if err != nil {
			return fmt.Errorf("QueueJob: %w", err)
		}
		jobs[i] = queued{id: resp.GetJobId(), sent: sent}
		return nil
	}
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	if l.every == 0 {
		var next atomic.Int64
		for range l.conc {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < l.jobs; i = int(next.Add(1)) - 1 {
					if err := send(i); err != nil {
						fail(err)
						return
					}
				}
			})
		}
	} else {
		t := time.NewTicker(l.every)
		for i := range l.jobs {
			wg.Go(func() {
				if err := send(i); err != nil {
					fail(err)
				}
			})
			if i < l.jobs-1 {
				<-t.C
			}
		}
		t.Stop()
	}
	wg.Wait()
	return jobs, start, firstErr
}

// latencies reads when each job was assigned and acknowledged (the database's clock, the
// same host's) and measures from when QueueJob was called.
func (m *measurement) latencies(ctx context.Context, jobs []queued, res *phaseResult) error {
	sent := make(map[string]time.Time, len(jobs))
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		sent[j.id] = j.sent
		ids = append(ids, j.id)
	}
	rows, err := m.db.Query(ctx, `SELECT id, assign_time, ack_time FROM jobs WHERE id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var assigned, acked time.Time
		if err := rows.Scan(&id, &assigned, &acked); err != nil {
			return err
		}
		res.assign = append(res.assign, assigned.Sub(sent[id]))
		res.ack = append(res.ack, acked.Sub(sent[id]))
	}
	slices.Sort(res.assign)
	slices.Sort(res.ack)
	return rows.Err()
}
