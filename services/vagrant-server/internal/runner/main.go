package runner

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
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// Main runs the vagrant-runner binary with its flags and environment until SIGINT or SIGTERM.
func Main(ctx context.Context, args, environ []string) error {
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "vagrant-runner", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) { return Open(ctx, cfg, log) },
	}, args, environ)
}

// Open assembles the runner: its id, the netns provider, the connection to vagrant-server,
// the operations it executes, and the runner loop beside the admin server; Run runs it.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "vagrant-runner", Logger: log, Admin: cfg.Admin})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	id, err := LoadID(cfg.RunnerID, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	providers, err := openProviders(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	creds := NewCredentials(TokenSource(cfg.Token, cfg.tokenFile()))
	conn, err := Dial(cfg.ServerAddr, creds)
	if err != nil {
		return nil, err
	}
	s.Defer("vagrant-server connection", func(context.Context) error { return conn.Close() })
	client := vagrant.NewVagrantClient(conn)
	exec, err := operation.New(operation.Options{Providers: providers, DefaultProvider: netns.Name, Server: client})
	if err != nil {
		return nil, err
	}
	metrics, err := NewMetrics(s.Metrics())
	if err != nil {
		return nil, err
	}
	journal, err := OpenJournal(filepath.Join(cfg.StateDir, "jobs"))
	if err != nil {
		return nil, err
	}
	s.Defer("job journal", func(context.Context) error { return journal.Close() })
	home, _ := os.UserHomeDir()
	r, err := New(Options{ID: id, ByIDOnly: cfg.ByIDOnly, Client: client, Credentials: creds, Executor: exec,
		BaseEnv: []string{"HOME=" + home}, Heartbeat: cfg.Heartbeat, ShutdownGrace: jobGrace(cfg.ShutdownTimeout),
		Journal: journal, Metrics: metrics, Logger: log})
	if err != nil {
		return nil, err
	}
	if a := s.Admin(); a != nil {
		// /readyz answers 200 whether or not the runner is registered: a runner waiting for
		// its server or its token is healthy, and restarting it would not bring the server
		// back. The body says why it is not registered; plinth_vagrant_runner_registered is
		// the metric to alert on.
		a.AddDetail(func(context.Context) string { return StatusText(r.Status()) })
	}
	s.Go("runner", r.Run)
	return s, nil
}

// openProviders builds the machine providers this runner offers: netns.
func openProviders(ctx context.Context, cfg Config, log *slog.Logger) (*provider.Set, error) {
	subnet, err := netip.ParsePrefix(cfg.NetnsSubnet)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_VAGRANT_NETNS_SUBNET: %w", err)
	}
	nsp, err := netns.New(netns.Options{Bridge: cfg.NetnsBridge, Subnet: subnet, Logger: log})
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

// StatusText is what /readyz says about the runner after "ok".
func StatusText(st Status) string {
	var b strings.Builder
	if st.Registered {
		fmt.Fprintf(&b, "runner %s: registered with vagrant-server since %s\n", st.ID, st.Since.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "runner %s: not registered: %s\n", st.ID, st.Problem)
	}
	if st.JobID != "" {
		fmt.Fprintf(&b, "running job %s\n", st.JobID)
	}
	return b.String()
}
