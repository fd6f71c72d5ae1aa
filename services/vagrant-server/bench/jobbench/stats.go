package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/latency"
)

// statsSettle is how long to wait before reading Postgres' cumulative statistics: idle
// backends report their counts within 10 s (PGSTAT_IDLE_INTERVAL).
const statsSettle = 11 * time.Second

// dbStats are Postgres counters; deltas of them are per phase.
type dbStats struct {
	commits  int64 // pg_stat_database.xact_commit of the server's database
	xmax     int64 // next transaction id: write transactions took one each (cluster-wide)
	walSyncs int64 // pg_stat_wal.wal_sync: WAL flushes to disk (cluster-wide)
}

func (a dbStats) minus(b dbStats) dbStats {
	return dbStats{commits: a.commits - b.commits, xmax: a.xmax - b.xmax, walSyncs: a.walSyncs - b.walSyncs}
}

func (m *measurement) readStats(ctx context.Context) (dbStats, error) {
	var s dbStats
	if _, err := m.db.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return s, err
	}
	err := m.db.QueryRow(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		(SELECT wal_sync FROM pg_stat_wal)`).Scan(&s.commits, &s.walSyncs)
	if err != nil {
		return s, fmt.Errorf("read statistics: %w", err)
	}
	s.xmax, err = m.xmax(ctx)
	return s, err
}

// xmax reads the next transaction id without taking one.
func (m *measurement) xmax(ctx context.Context) (int64, error) {
	var x int64
	err := m.db.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&x)
	return x, err
}

// idleRates are the background commits (polls, reaper passes) of an idle server, which the
// per-job figures leave out.
type idleRates struct {
	commitsPerSec, walSyncsPerSec float64
}

func (m *measurement) idleRates(ctx context.Context) (idleRates, error) {
	time.Sleep(statsSettle) // let the warm-up's counts arrive first
	a, err := m.readStats(ctx)
	if err != nil {
		return idleRates{}, err
	}
	start := time.Now()
	time.Sleep(statsSettle)
	b, err := m.readStats(ctx)
	if err != nil {
		return idleRates{}, err
	}
	secs := time.Since(start).Seconds()
	d := b.minus(a)
	return idleRates{commitsPerSec: float64(d.commits) / secs, walSyncsPerSec: float64(d.walSyncs) / secs}, nil
}

// result is one build with one runner count.
type result struct {
	label         string
	runners       int
	burst, steady phaseResult
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// perJob renders the per-job costs of a phase.
func perJob(p phaseResult) string {
	n := float64(p.jobs)
	tick := 10.0 // ms per clock tick
	return fmt.Sprintf("%.1f commits, %.1f write tx, %.2f WAL syncs; CPU ms server %.2f runners %.2f postgres %.2f bench+nats %.2f",
		float64(p.stats.commits)/n, float64(p.stats.xmax)/n, float64(p.stats.walSyncs)/n,
		float64(p.cpu.server)*tick/n, float64(p.cpu.runners)*tick/n, float64(p.cpu.postgres)*tick/n, float64(p.cpu.self)*tick/n)
}

func (r result) print(w io.Writer) {
	b, s := r.burst, r.steady
	fmt.Fprintf(w, "\n== %s, %d runners\n", r.label, r.runners)
	fmt.Fprintf(w, "burst  %d jobs: %.0f jobs/s (%.2fs), events drained %.0f ms later; QueueJob→ack p50 %.1f p99 %.1f ms\n",
		b.jobs, b.jobsPerSecond(), b.elapsed.Seconds(), ms(b.drain), ms(latency.Percentile(b.ack, .5)), ms(latency.Percentile(b.ack, .99)))
	fmt.Fprintf(w, "       per job: %s\n", perJob(b))
	fmt.Fprintf(w, "steady %d jobs at %.0f/s: QueueJob→assignment p50 %.1f p99 %.1f max %.1f ms; QueueJob→ack p50 %.1f p99 %.1f max %.1f ms\n",
		s.jobs, float64(s.jobs)/s.elapsed.Seconds(), ms(latency.Percentile(s.assign, .5)), ms(latency.Percentile(s.assign, .99)), ms(latency.Percentile(s.assign, 1)),
		ms(latency.Percentile(s.ack, .5)), ms(latency.Percentile(s.ack, .99)), ms(latency.Percentile(s.ack, 1)))
	fmt.Fprintf(w, "       per job: %s\n", perJob(s))
}

func printTable(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "build\trunners\tburst jobs/s\tcommits/job\twrite tx/job\tWAL syncs/job\tsteady assign p50/p99 ms\tsteady ack p50/p99 ms\t")
	for _, r := range rs {
		n := float64(r.burst.jobs)
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f\t%.1f\t%.2f\t%.1f / %.1f\t%.1f / %.1f\t\n", r.label, r.runners, r.burst.jobsPerSecond(),
			float64(r.burst.stats.commits)/n, float64(r.burst.stats.xmax)/n, float64(r.burst.stats.walSyncs)/n,
			ms(latency.Percentile(r.steady.assign, .5)), ms(latency.Percentile(r.steady.assign, .99)),
			ms(latency.Percentile(r.steady.ack, .5)), ms(latency.Percentile(r.steady.ack, .99)))
	}
	tw.Flush()
}
