package app

import (
	"context"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
)

// Main runs the vagrant-server binary with its flags and environment.
func Main(ctx context.Context, args []string, environ []string) error {
	cfg := Defaults()
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, ""); !ok {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.ForService("vagrant-server", cfg.Common))
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	tel.Logger.Info("starting", "config", config.LogValue(&cfg))
	a, err := Open(ctx, cfg, tel.Logger)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
