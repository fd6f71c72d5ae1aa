package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Main runs the binary: `lvmd-agent [serve] [flags]` serves; `lvmd-agent dev-vg ...` makes
// (or removes) a loop-backed development volume group.
func Main(ctx context.Context, args, environ []string) error {
	if len(args) > 0 && args[0] == "dev-vg" {
		return devVG(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "lvmd-agent", Config: &cfg,
		Header: "lvmd-agent serves TopoLVM's lvmd protocol on real lvm2, with backups to S3.\nlvmd-agent dev-vg -h: a loop-backed volume group for development.",
		Check: func() error {
			if err := cfg.Resolve(); err != nil {
				return err
			}
			return cfg.Validate()
		},
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			log.Info("node", "name", cfg.NodeName, "device_classes", len(cfg.classes.All()))
			return Open(ctx, cfg, log)
		},
	}, args, environ)
}
