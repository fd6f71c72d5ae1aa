package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
)

// Main runs the vagrant-server binary with its flags and environment.
func Main(ctx context.Context, args []string, environ []string) error {
	cfg := Defaults()
	if err := config.Load(&cfg, args, environ); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, config.Usage(&cfg))
			return nil
		}
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.Options{
		ServiceName: "plinth-vagrant-server", LogFormat: cfg.LogFormat, LogLevel: cfg.LogLevel, OTLPEndpoint: cfg.OTLPEndpoint,
	})
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
