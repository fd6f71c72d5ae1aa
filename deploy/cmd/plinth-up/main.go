// Command plinth-up runs the whole Plinth suite on this machine (`make up`): NATS with
// JetStream, Postgres, and every service under services/, until Ctrl-C. For the Tiltfile it
// also runs the infrastructure alone (-infra-only) and one service at a time (-run BINARY).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/plinth-dev/plinth/deploy/internal/launcher"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "plinth-up:", err)
		os.Exit(1)
	}
}

func run() error {
	// A non-login root shell may lack /usr/sbin and /sbin, where Debian keeps lvm and ip: the
	// launcher checks for them there, and the services it starts must find them too.
	if err := os.Setenv("PATH", launcher.SbinPath(os.Getenv("PATH"))); err != nil {
		return err
	}
	cfg, err := launcher.ParseConfig(os.Args[1:], os.Environ(), os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.RunBinary != "" {
		// Replaces this process with the service: its signals are the service's own.
		return launcher.RunService(context.Background(), cfg)
	}
	// Two slots: the second interrupt (kill at once) must not be lost while the first is
	// being handled.
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	if cfg.InfraOnly {
		return launcher.RunInfra(context.Background(), cfg, interrupts)
	}
	return launcher.Run(context.Background(), cfg, interrupts)
}
