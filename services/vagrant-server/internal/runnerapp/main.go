package runnerapp

import (
	"context"
	"log/slog"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the vagrant-runner binary with its flags and environment until SIGINT or SIGTERM.
func Main(ctx context.Context, args, environ []string) error {
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "vagrant-runner", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) { return Open(ctx, cfg, log) },
	}, args, environ)
}
