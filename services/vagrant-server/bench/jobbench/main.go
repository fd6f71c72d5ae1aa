// Command jobbench measures vagrant-server end to end as an operator runs it: a real
// vagrant-server process and N real vagrant-runner processes on one private Postgres cluster
// (durable settings: fsync and synchronous_commit on) and an embedded NATS, driven over gRPC
// like a Vagrant client. For every build given (e.g. before and after a change, so both are
// measured in one run on the same machine) and every runner count it reports:
//
//   - burst: jobs/s from the first QueueJob to the last job's SUCCESS, when many jobs are
//     queued at once by 16 concurrent clients;
//   - steady: QueueJob → assignment (the server's claim) and QueueJob → acknowledgement (the
//     runner holds the job) p50/p99 at a fixed arrival rate;
//   - per job: Postgres commits and write transactions, WAL syncs, and the CPU time of the
//     server, the runners, Postgres and this process (client + NATS).
//
// bench/vagrant.sh builds the binaries and runs it; see services/vagrant-server/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// build is one pair of binaries under test.
type build struct {
	label string
	dir   string // holds vagrant-server and vagrant-runner
}

type options struct {
	builds      []build
	runners     []int
	burstJobs   int
	burstConc   int
	rate        int
	steady      time.Duration
	work        string
	databaseURL string
	serverEnv   []string
	runnerEnv   []string
	statements  bool
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var o options
	var builds, runners string
	flag.StringVar(&builds, "builds", "", "comma-separated label=dir pairs; each dir holds vagrant-server and vagrant-runner")
	flag.StringVar(&runners, "runners", "1,4,16", "runner counts to measure")
	flag.IntVar(&o.burstJobs, "burst", 2000, "jobs queued at once in the burst phase")
	flag.IntVar(&o.burstConc, "burst-clients", 16, "concurrent QueueJob callers in the burst phase")
	flag.IntVar(&o.rate, "rate", 100, "jobs/s in the steady phase")
	flag.DurationVar(&o.steady, "steady", 10*time.Second, "length of the steady phase")
	flag.StringVar(&o.work, "work", "", "scratch directory (required; must be searchable by the postgres user)")
	flag.StringVar(&o.databaseURL, "database-url", "", "use this Postgres instead of a private cluster (per-job counts then include other users' work)")
	serverEnv := flag.String("server-env", "", "comma-separated extra environment for the server (e.g. BENCH_PPROF_ADDR=127.0.0.1:6061 with a -tags benchpprof build)")
	runnerEnv := flag.String("runner-env", "", "comma-separated extra environment for the runners")
	flag.BoolVar(&o.statements, "statements", false, "load pg_stat_statements and print the statements that cost Postgres most in each burst")
	flag.Parse()
	if *serverEnv != "" {
		o.serverEnv = strings.Split(*serverEnv, ",")
	}
	if *runnerEnv != "" {
		o.runnerEnv = strings.Split(*runnerEnv, ",")
	}
	if o.work == "" || builds == "" {
		return errors.New("-work and -builds are required")
	}
	for _, b := range strings.Split(builds, ",") {
		label, dir, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("-builds: %q is not label=dir", b)
		}
		o.builds = append(o.builds, build{label: label, dir: dir})
	}
	for _, s := range strings.Split(runners, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-runners: %q is not a positive count", s)
		}
		o.runners = append(o.runners, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := startEnv(ctx, o)
	if err != nil {
		return err
	}
	defer env.close()
	var results []result
	// Builds alternate within each runner count, so drift in the machine's load hits both.
	for _, n := range o.runners {
		for _, b := range o.builds {
			r, err := env.measure(ctx, o, b, n)
			if err != nil {
				return fmt.Errorf("%s with %d runners: %w", b.label, n, err)
			}
			results = append(results, r)
			r.print(os.Stdout)
		}
	}
	fmt.Println()
	printTable(os.Stdout, results)
	return nil
}
