package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

	backupv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/backup/v1"
	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	"github.com/plinth-dev/plinth/libs/platform/config"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/restore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// BackupConfig configures the instance side's base backups and recoveries. It is part of
// Config. The defaults follow CloudNativePG's instance pods: PostgreSQL's socket in
// /controller/run, PGDATA in /var/lib/postgresql/data/pgdata.
type BackupConfig struct {
	InstanceURL    string   `env:"PLINTH_CNPGI_INSTANCE_URL" flag:"instance-url" secret:"url" default:"postgres://postgres@/postgres?host=/controller/run&sslmode=disable" usage:"how Backup connects to the PostgreSQL it backs up (a superuser or a role with pg_backup_start/stop); the plugin must also read that instance's PGDATA"`
	InstanceName   string   `env:"PLINTH_CNPGI_INSTANCE_NAME" flag:"instance-name" usage:"the backed-up instance's name (the pod) in backup results and the catalog (default: the host name)"`
	PGData         string   `env:"PLINTH_CNPGI_PGDATA" flag:"pgdata" default:"/var/lib/postgresql/data/pgdata" usage:"the instance's data directory: WAL archive sources and restore destinations must lie inside it (or inside the volume pg_wal links to), and RestoreJobHooks.Restore fills it"`
	ExtraPGData    []string `env:"PLINTH_CNPGI_EXTRA_PGDATA" flag:"extra-pgdata" usage:"other data directories whose WAL this plugin archives and restores (a plugin serving several PostgreSQL servers on one host), comma-separated"`
	RestoreCommand string   `env:"PLINTH_CNPGI_RESTORE_COMMAND" flag:"restore-command" usage:"restore_command returned by RestoreJobHooks.Restore (default: this binary's wal-restore over the plugin socket; under CloudNativePG: /controller/manager wal-restore --log-destination /controller/log/postgres.json %f %p)"`
}

// instance is this instance's name: the configured one, else the host name (the pod's).
func (c *BackupConfig) instance() string {
	if c.InstanceName != "" {
		return c.InstanceName
	}
	h, _ := os.Hostname()
	return h
}

// dataDirs are the data directories WAL may be archived from and restored into.
func (c *BackupConfig) dataDirs() []string {
	return append([]string{c.PGData}, c.ExtraPGData...)
}

// validate checks the backup settings.
func (c *BackupConfig) validate() error {
	var errs []error
	if c.PGData != "" && !filepath.IsAbs(c.PGData) {
		errs = append(errs, fmt.Errorf("PLINTH_CNPGI_PGDATA (-pgdata): %q must be an absolute path", c.PGData))
	}
	for _, d := range c.ExtraPGData {
		if !filepath.IsAbs(d) {
			errs = append(errs, fmt.Errorf("PLINTH_CNPGI_EXTRA_PGDATA (-extra-pgdata): %q must be an absolute path", d))
		}
	}
	if c.InstanceURL == "" {
		errs = append(errs, errors.New("PLINTH_CNPGI_INSTANCE_URL (-instance-url): required"))
	}
	return errors.Join(errs...)
}

// registerBackup registers the Backup and RestoreJobHooks services and returns their
// identity capabilities.
func registerBackup(g *grpc.Server, cfg Config, log *slog.Logger, cat *catalog.Catalog, stores *stores.Registry) ([]identityv1.PluginCapability_Service_Type, error) {
	instanceName := cfg.instance()
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the plugin binary for restore_command: %w", err)
	}
	socket := filepath.Join(cfg.PluginDir, cfg.PluginName)
	if network, path, err := config.ParseListenAddr(cfg.GRPCAddr); err == nil && network == "unix" {
		socket = path
	}
	svc := backup.NewService(cat, backup.Options{InstanceURL: cfg.InstanceURL, Logger: log})
	rs := restore.NewService(restore.Options{PGData: cfg.PGData, Logger: log,
		Command: restore.Command{Binary: bin, Socket: socket, Plugin: cfg.PluginName, Fixed: cfg.RestoreCommand}})
	backupv1.RegisterBackupServer(g, instance.NewBackupServer(svc, stores, cfg.PluginName, version(), instanceName, log))
	walv1.RegisterRestoreJobHooksServer(g, restore.NewRestoreJobServer(rs, stores, cfg.PluginName, log))
	return []identityv1.PluginCapability_Service_Type{
		identityv1.PluginCapability_Service_TYPE_BACKUP_SERVICE, identityv1.PluginCapability_Service_TYPE_RESTORE_JOB,
	}, nil
}
