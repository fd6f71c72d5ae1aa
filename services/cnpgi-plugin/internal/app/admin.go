package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/rebuild"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// The maintenance commands work on the stores and the catalog directly, with the server's
// configuration (PLINTH_DATABASE_URL, PLINTH_CNPGI_CONFIG, ...): no running plugin needed.

// retentionConfig is `cnpgi-plugin retention`'s configuration.
type retentionConfig struct {
	Config
	ObjectStore    string `flag:"object-store" usage:"the store (default: the configuration's default store)"`
	ServerName     string `flag:"server-name" usage:"the server (cluster) whose backups and WAL to prune; required"`
	RecoveryWindow string `flag:"recovery-window" usage:"keep every point of this window recoverable: a count and h, d, w or m (e.g. 7d)"`
	KeepLast       int    `flag:"keep-last" usage:"keep at least this many completed backups"`
	DryRun         bool   `flag:"dry-run" usage:"report what would be deleted, delete nothing"`
}

// rebuildConfig is `cnpgi-plugin catalog rebuild`'s configuration.
type rebuildConfig struct {
	Config
	ObjectStore string `flag:"object-store" usage:"the store to read (default: every configured store)"`
	ServerName  string `flag:"server-name" usage:"the server to rebuild (default: every server the store holds)"`
}

// runAdmin runs `retention` or `catalog rebuild`; the report goes to out.
func runAdmin(ctx context.Context, cmd string, args, environ []string, out io.Writer, log *slog.Logger) error {
	switch cmd {
	case "retention":
		var rc retentionConfig
		if err := loadAdmin(&rc, &rc.Config, args, environ, out, "retention -server-name=NAME [-recovery-window=7d] [-keep-last=N] [-dry-run]"); err != nil {
			return err
		}
		return retention(ctx, rc, environ, out, log)
	case "catalog":
		if len(args) == 0 || args[0] != "rebuild" {
			return errors.New("usage: cnpgi-plugin catalog rebuild [-object-store=NAME] [-server-name=NAME]")
		}
		var rc rebuildConfig
		if err := loadAdmin(&rc, &rc.Config, args[1:], environ, out, "catalog rebuild [-object-store=NAME] [-server-name=NAME]"); err != nil {
			return err
		}
		return rebuildCatalog(ctx, rc, environ, out, log)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// errHelpShown ends a command after printing its help.
var errHelpShown = errors.New("help shown")

func loadAdmin(dst any, cfg *Config, args, environ []string, out io.Writer, usage string) error {
	*cfg = Defaults()
	if ok, err := config.LoadOrUsage(dst, args, environ, out, "usage: cnpgi-plugin "+usage); !ok {
		if err == nil {
			return errHelpShown
		}
		return err
	}
	if err := cfg.Resolve(); err != nil {
		return err
	}
	return config.Required(config.EnvDatabaseURL, "database-url", cfg.DatabaseURL)
}

func openAdmin(ctx context.Context, cfg Config, environ []string) (*stores.Registry, *catalog.Catalog, func(), error) {
	stores, err := loadStores(cfg, environ)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, pool, err := catalog.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open the catalog database: %w", err)
	}
	return stores, cat, pool.Close, nil
}

func retention(ctx context.Context, rc retentionConfig, environ []string, out io.Writer, log *slog.Logger) error {
	if rc.ServerName == "" {
		return errors.New("retention: -server-name is required")
	}
	policy, err := backup.ParsePolicy(rc.RecoveryWindow, rc.KeepLast)
	if err != nil {
		return fmt.Errorf("retention: %w (use -recovery-window and/or -keep-last)", err)
	}
	stores, cat, closeDB, err := openAdmin(ctx, rc.Config, environ)
	if err != nil {
		return err
	}
	defer closeDB()
	st, err := stores.Get(rc.ObjectStore)
	if err != nil {
		return err
	}
	svc := backup.NewService(cat, backup.Options{Logger: log})
	rep, err := svc.Retain(ctx, wal.Target{Store: st, Server: rc.ServerName}, policy, rc.DryRun)
	printRetention(out, st.Name, rc.ServerName, rep)
	return err
}

func printRetention(out io.Writer, store, server string, rep backup.Report) {
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "none (no completed backup)"
		}
		return t.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(out, "store %s, server %s, policy: %s\n", store, server, rep.Policy)
	fmt.Fprintf(out, "backups kept (%d): %s\n", len(rep.Kept), strings.Join(rep.Kept, " "))
	fmt.Fprintf(out, "backups %s (%d): %s\n", verb, len(rep.Deleted), strings.Join(rep.Deleted, " "))
	horizon := rep.WALHorizon
	if horizon == "" {
		horizon = "all"
	}
	fmt.Fprintf(out, "WAL files %s: %d (kept from %s on)\n", verb, rep.WALDeleted, horizon)
	fmt.Fprintf(out, "first recoverability point: %s\nlast successful backup: %s\n", when(rep.FirstRecoverabilityPoint), when(rep.LastSuccessful))
}

func rebuildCatalog(ctx context.Context, rc rebuildConfig, environ []string, out io.Writer, log *slog.Logger) error {
	stores, cat, closeDB, err := openAdmin(ctx, rc.Config, environ)
	if err != nil {
		return err
	}
	defer closeDB()
	names := stores.Names()
	if rc.ObjectStore != "" {
		names = []string{rc.ObjectStore}
	}
	var servers []string
	if rc.ServerName != "" {
		servers = []string{rc.ServerName}
	}
	for _, name := range names {
		st, err := stores.Get(name)
		if err != nil {
			return err
		}
		reps, err := rebuild.Run(ctx, cat, st, servers, log)
		for _, r := range reps {
			fmt.Fprintf(out, "store %s, server %s: WAL files added %d, removed %d, unchanged %d; backups recorded %d, removed %d\n",
				r.Store, r.Server, r.WALAdded, r.WALRemoved, r.WALKept, r.BackupsSaved, r.BackupsRemoved)
		}
		if err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
	}
	return nil
}
