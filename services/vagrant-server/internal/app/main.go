package app

import (
	"context"
	"log/slog"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the vagrant-server binary with its flags and environment.
func Main(ctx context.Context, args []string, environ []string) error {
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "vagrant-server", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) { return Open(ctx, cfg, log) },
	}, args, environ)
}
