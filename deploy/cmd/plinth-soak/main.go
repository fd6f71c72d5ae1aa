// Command plinth-soak runs the suite as `make up` does under a mixed load for a set time and
// records, every few seconds, each service's resident memory, goroutines and open file
// descriptors (from its /metrics) and the load's p99 latency per window, then says whether the
// curves are flat and whether anything failed. bench/soak.sh builds and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are the soak's settings.
type options struct {
	up       string        // the plinth-up binary
	home     string        // PLINTH_HOME for the suite
	out      string        // where the samples are written
	offset   int           // port offset of the suite
	duration time.Duration // how long the load runs
	interval time.Duration // how often resources are sampled
	window   time.Duration // length of one ghz run (one p99 sample)
	rps      int           // calls/s per RPC target
	ghz      string        // the ghz binary
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "plinth-soak:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	flag.StringVar(&o.up, "up", "bin/plinth-up", "the plinth-up binary")
	flag.StringVar(&o.ghz, "ghz", "bin/ghz", "the ghz binary")
	flag.StringVar(&o.home, "home", "", "PLINTH_HOME for the suite (default: a temp dir)")
	flag.StringVar(&o.out, "out", "", "directory for the samples (default: <home>/soak)")
	flag.IntVar(&o.offset, "port-offset", 500, "port offset of the suite")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the load runs")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "how often resources are sampled")
	flag.DurationVar(&o.window, "window", 10*time.Second, "length of one load window (one p99 sample per target)")
	flag.IntVar(&o.rps, "rps", 150, "calls/s per RPC target")
	flag.Parse()
	if o.home == "" {
		dir, err := os.MkdirTemp("", "plinth-soak-")
		if err != nil {
			return err
		}
		o.home = dir
	}
	if o.out == "" {
		o.out = filepath.Join(o.home, "soak")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	suite, err := startSuite(ctx, o)
	if err != nil {
		return err
	}
	defer suite.stop()
	fmt.Printf("suite up: %d services; load for %s, samples every %s, into %s\n", len(suite.endpoints.Services), o.duration, o.interval, o.out)

	rec := newRecorder()
	loadCtx, endLoad := context.WithTimeout(ctx, o.duration)
	defer endLoad()
	done := make(chan struct{})
	go func() { defer close(done); sample(loadCtx, suite, o.interval, rec) }()
	runLoad(loadCtx, suite, o, rec)
	<-done
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if err := rec.write(o.out); err != nil {
		return err
	}
	if !rec.report(os.Stdout) {
		return errors.New("the soak found growth or errors (see above)")
	}
	return nil
}
