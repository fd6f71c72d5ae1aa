package app

import (
	"context"
	"log/slog"

	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the stats binary: load and check the config, set up telemetry, open, serve.
func Main(ctx context.Context, args []string, environ []string) error {
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "stats", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			// client-go logs through klog: into the service's log, not raw onto stderr.
			klog.SetSlogLogger(log.With("component", "client-go"))
			return Open(ctx, cfg, log)
		},
	}, args, environ)
}
