// Package runnerapp wires the vagrant-runner binary: its Config, its ids, the netns provider,
// the connection to vagrant-server, the operations and a runner loop per id beside the admin
// server, and their shutdown. It holds no runner logic: that is package runner.
package runnerapp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// Open assembles the runner: its ids, the netns provider, the connection to vagrant-server,
// the operations it executes, and a runner loop per id beside the admin server; Run runs it.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "vagrant-runner", Logger: log, Admin: cfg.Admin})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	id, err := runner.LoadID(cfg.RunnerID, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	providers, err := openProviders(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	creds := runner.NewCredentials(runner.TokenSource(cfg.Token, cfg.tokenFile()))
	conn, err := runner.Dial(cfg.ServerAddr, creds)
	if err != nil {
		return nil, err
	}
	s.Defer("vagrant-server connection", func(context.Context) error { return conn.Close() })
	client := vagrant.NewVagrantClient(conn)
	exec, err := operation.New(operation.Options{Providers: providers, DefaultProvider: netns.Name, Server: client})
	if err != nil {
		return nil, err
	}
	metrics, err := runner.NewMetrics(s.Metrics())
	if err != nil {
		return nil, err
	}
	journal, err := runner.OpenJournal(filepath.Join(cfg.StateDir, "jobs"))
	if err != nil {
		return nil, err
	}
	s.Defer("job journal", func(context.Context) error { return journal.Close() })
	home, _ := os.UserHomeDir()
	base := runner.Options{Client: client, Credentials: creds, Executor: exec,
		BaseEnv: []string{"HOME=" + home}, Heartbeat: cfg.Heartbeat, ShutdownGrace: jobGrace(cfg.ShutdownTimeout),
		Journal: journal, Metrics: metrics, Logger: log}
	runners, err := identities(base, cfg, id)
	if err != nil {
		return nil, err
	}
	if a := s.Admin(); a != nil {
		// /readyz answers 200 whether or not the runner is registered: a runner waiting for
		// its server or its token is healthy, and restarting it would not bring the server
		// back. The body says why it is not registered; plinth_vagrant_runner_registered is
		// the metric to alert on.
		a.AddDetail(func(context.Context) string {
			var b strings.Builder
			for _, r := range runners {
				b.WriteString(runner.StatusText(r.Status()))
			}
			return b.String()
		})
	}
	for _, r := range runners {
		s.Go("runner "+r.ID(), r.Run)
	}
	return s, nil
}

// identities are the runner ids this process registers, sharing one connection, executor
// and journal: id, taking any job it fits, in cfg.Jobs slots; and, when cfg.ReservedID is
// set, that id by_id_only in cfg.ReservedJobs slots of its own, so the client its jobs
// target (kaas under make up) never waits behind jobs for any runner.
func identities(base runner.Options, cfg Config, id string) ([]*runner.Runner, error) {
	general := base
	general.ID, general.ByIDOnly, general.Slots = id, cfg.ByIDOnly, cfg.Jobs
	r, err := runner.New(general)
	if err != nil {
		return nil, err
	}
	runners := []*runner.Runner{r}
	if cfg.ReservedID == "" {
		return runners, nil
	}
	if cfg.ReservedID == id {
		return nil, fmt.Errorf("PLINTH_VAGRANT_RUNNER_RESERVED_ID (-reserved-id): %q is the runner's own id; choose another", id)
	}
	reserved := base
	reserved.ID, reserved.ByIDOnly, reserved.Slots = cfg.ReservedID, true, cfg.ReservedJobs
	if r, err = runner.New(reserved); err != nil {
		return nil, err
	}
	return append(runners, r), nil
}

// openProviders builds the machine providers this runner offers: netns.
func openProviders(ctx context.Context, cfg Config, log *slog.Logger) (*provider.Set, error) {
	subnet, err := netip.ParsePrefix(cfg.NetnsSubnet)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_VAGRANT_NETNS_SUBNET: %w", err)
	}
	sandbox, err := cfg.sandbox()
	if err != nil {
		return nil, fmt.Errorf("PLINTH_VAGRANT_NETNS_SANDBOX: %w", err)
	}
	if sandbox == nil {
		log.Warn("netns machines run without a sandbox (PLINTH_VAGRANT_NETNS_SANDBOX=off): a job in one is root in the runner's filesystem and processes")
	}
	nsp, err := netns.New(netns.Options{Bridge: cfg.NetnsBridge, Subnet: subnet, Sandbox: sandbox, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := nsp.Check(ctx); err != nil {
		log.Warn("netns machines cannot work on this host; jobs on netns targets will fail", "problem", err.Error())
	}
	return provider.NewSet(nsp)
}

// jobGrace is how long a running job may finish after SIGTERM: most of the shutdown deadline,
// leaving the rest to close the streams.
func jobGrace(shutdown time.Duration) time.Duration { return shutdown * 9 / 10 }
