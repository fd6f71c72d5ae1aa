package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/plinth-dev/plinth/libs/platform/atomicfile"
	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
	"github.com/plinth-dev/plinth/libs/platform/config"
)

// devCeph runs a single-node development Ceph cluster (cephlocal: mon, mgr with the dashboard
// and prometheus modules, one memstore OSD) in the foreground until SIGTERM or SIGINT, then
// stops it cleanly so the OSD keeps what it stored for the next start. It is the compose
// file's `ceph` service, what `make up` starts beside stats on a workstation; stats reads it
// through the dashboard (user cephlocal.DashboardUser, password in -password-out).
func devCeph(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("stats dev-ceph", flag.ContinueOnError)
	fs.SetOutput(out)
	dir := fs.String("dir", ".plinth/ceph", "the cluster's directory (kept: a second start reuses its cluster)")
	base := fs.Int("port-base", 7300, fmt.Sprintf("first of the cluster's %d ports: mon, prometheus (+2), dashboard (+3), daemons", cephlocal.BlockSize))
	serve := fs.String("serve-addr", "127.0.0.1", "address the dashboard and prometheus module listen on (0.0.0.0 for other containers)")
	memstore := fs.String("memstore", "512M", "the OSD's capacity, held in RAM (e.g. 512M, 2G)")
	passwordOut := fs.String("password-out", "", "also write the dashboard password to this file (0600), for a stats that shares only it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	bytes, err := config.ParseSize(*memstore)
	if err != nil {
		return fmt.Errorf("-memstore: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewJSONHandler(out, nil))
	c, err := cephlocal.Start(ctx, cephlocal.Options{Dir: *dir, Ports: cephlocal.PortsAt(*base), Dashboard: true,
		ServeAddr: *serve, MemstoreBytes: bytes, Logger: log})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	if *passwordOut != "" {
		pw, err := c.DashboardPassword()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(*passwordOut), 0o700); err != nil {
			return fmt.Errorf("-password-out: %w", err)
		}
		if err := atomicfile.WritePrivate(*passwordOut, []byte(pw)); err != nil {
			return fmt.Errorf("-password-out: %w", err)
		}
	}
	log.Info("dev Ceph serving", "fsid", c.FSID(), "dashboard", c.DashboardURL(), "dashboard_user", cephlocal.DashboardUser,
		"prometheus", c.PrometheusURL(), "serve_addr", *serve, "new", c.Fresh(), "took", c.StartupTime().String())
	<-ctx.Done()
	log.Info("stopping the dev Ceph (the OSD writes its store to disk)")
	stopped = true
	return c.Stop()
}
