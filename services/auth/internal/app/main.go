package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/auth/internal/cli"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// Main runs the auth binary: `auth [serve] [flags]` serves; `auth users ...` administers users;
// `auth dev-oidc ...` runs a local OpenID provider for trying sign-in.
func Main(ctx context.Context, args []string, environ []string) error {
	if len(args) > 0 && args[0] == "users" {
		return users(ctx, args[1:], environ)
	}
	if len(args) > 0 && args[0] == "dev-oidc" {
		return devOIDC(ctx, args[1:], environ, os.Stdout)
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "auth", Config: &cfg, Check: cfg.ValidateServe,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			return Open(ctx, cfg, log, os.Stdout)
		}}, args, environ)
}

// users runs `auth users [flags] <command> ...`: flags come before the subcommand, in
// -name=value form (auth users -log-level=debug add alice). It needs only the database.
func users(ctx context.Context, args, environ []string) error {
	cfg := Defaults()
	rest := splitFlags(&args)
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, ""); !ok {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log, err := telemetry.NewLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	pool, err := service.OpenPostgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
	if err != nil {
		return err
	}
	defer pool.Close()
	svc, err := identity.NewService(store.New(pool), cfg.identityOptions(log))
	if err != nil {
		return err
	}
	return cli.RunUsers(ctx, svc, rest, cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
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
