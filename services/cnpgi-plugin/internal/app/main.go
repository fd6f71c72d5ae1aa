package app

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cli"
)

// Main runs the binary: `cnpgi-plugin [serve] [flags]` serves the plugin;
// `cnpgi-plugin wal-archive ...` and `wal-restore ...` call it (archive_command and
// restore_command); `cnpgi-plugin gen-certs` writes certificates for its mutual TLS;
// `cnpgi-plugin retention ...` and `catalog rebuild` maintain the stores and the catalog;
// `cnpgi-plugin health` checks the socket (the sidecar's startup probe).
func Main(ctx context.Context, args, environ []string) error {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "wal-archive" || args[0] == "wal-restore" || args[0] == "gen-certs" ||
		args[0] == "retention" || args[0] == "catalog" || args[0] == "health") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "gen-certs" {
		return genCerts(args, os.Stdout, os.Stderr)
	}
	if cmd == "retention" || cmd == "catalog" {
		err := runAdmin(ctx, cmd, args, environ, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		if errors.Is(err, errHelpShown) {
			return nil
		}
		return err
	}
	if cmd != "serve" {
		return cli.Run(ctx, cmd, args, environ, cli.IO{Err: os.Stderr})
	}
	cfg := Defaults()
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, ""); !ok {
		return err
	}
	if err := cfg.Resolve(); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.ForService("cnpgi-plugin", cfg.Telemetry))
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	tel.Logger.Info("starting", "config", config.LogValue(&cfg))
	config.WarnUnknown(tel.Logger, &cfg, environ)
	a, err := Open(ctx, cfg, tel.Logger, environ)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
