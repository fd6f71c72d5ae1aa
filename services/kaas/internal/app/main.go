package app

import (
	"context"
	"log/slog"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the kaas binary until ctx ends or it is signalled.
func Main(ctx context.Context, args, environ []string) error {
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "kaas", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			a, err := Open(ctx, cfg, log)
			if err != nil {
				return nil, err
			}
			return a.Service, nil
		},
	}, args, environ)
}
