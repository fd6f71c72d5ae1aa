package app

import (
	"context"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/auth/internal/cli"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// Main runs the auth binary: `auth [serve] [flags]` serves; `auth users ...` administers users.
func Main(ctx context.Context, args []string, environ []string) error {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "users") {
		cmd, args = args[0], args[1:]
	}
	cfg := Defaults()
	var rest []string
	if cmd == "users" {
		// Flags come before the subcommand, in -name=value form: auth users -log-level=debug add alice
		rest = splitFlags(&args)
	}
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, ""); !ok {
		return err
	}
	validate := cfg.ValidateServe
	if cmd == "users" {
		validate = cfg.Validate
	}
	if err := validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.ForService("auth", cfg.Common))
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	if cmd == "users" {
		st, pool, err := store.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		svc, err := identity.NewService(st, identity.Options{Hash: cfg.HashParams(), Lockout: cfg.Lockout(), TokenTTL: cfg.TokenTTL})
		if err != nil {
			return err
		}
		return cli.RunUsers(ctx, svc, rest, cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	}
	tel.Logger.Info("starting", "config", config.LogValue(&cfg))
	a, err := Open(ctx, cfg, tel.Logger, os.Stdout)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// splitFlags keeps the leading -flags in args and returns the subcommand words after them.
func splitFlags(args *[]string) []string {
	for i, a := range *args {
		if len(a) == 0 || a[0] != '-' {
			rest := (*args)[i:]
			*args = (*args)[:i]
			return rest
		}
	}
	return nil
}
