package app

import (
	"context"
	"log/slog"
	"os"

	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the stats binary: load and check the config, set up telemetry, open, serve;
// `stats dev-ceph ...` runs a development Ceph cluster in the foreground instead.
func Main(ctx context.Context, args []string, environ []string) error {
	if len(args) > 0 && args[0] == "dev-ceph" {
		return devCeph(ctx, args[1:], os.Stdout)
	}
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "stats", Config: &cfg,
		Header: "stats serves Koor's storage dashboard API from Ceph, Kubernetes and the suite's inventory.\nstats dev-ceph -h: a single-node Ceph cluster for development.",
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			// client-go logs through klog: into the service's log, not raw onto stderr.
			klog.SetSlogLogger(log.With("component", "client-go"))
			return Open(ctx, cfg, log)
		},
	}, args, environ)
}
