// Package app wires the cnpgi-plugin binary: configuration, object stores, catalog, WAL
// service and gRPC server, and dispatches the wal-archive / wal-restore CLI. It holds no
// business rules.
package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Config is the plugin server's configuration (see the README's table).
type Config struct {
	config.Common

	// Endpoint is the plugin's name and socket directory, declared once with the commands';
	// the gRPC socket defaults to <dir>/<plugin name>.
	cnpgiplugin.Endpoint

	ConfigFile      string        `env:"PLINTH_CNPGI_CONFIG" flag:"config" usage:"object store configuration file (YAML or JSON); empty: one POSIX store named local"`
	DefaultStoreDir string        `env:"PLINTH_CNPGI_DEFAULT_STORE_DIR" flag:"default-store-dir" usage:"directory of the local POSIX store used without a config file (default <plugin dir>/../cnpgi-store)"`
	SpoolDir        string        `env:"PLINTH_CNPGI_SPOOL_DIR" flag:"spool-dir" usage:"directory for WAL read ahead during recovery, emptied at start (default <plugin dir>/../cnpgi-spool)"`
	WALTimeout      time.Duration `env:"PLINTH_CNPGI_WAL_TIMEOUT" flag:"wal-timeout" default:"10m" usage:"longest a single WAL archive or restore call may take"`

	Kubeconfig    string `env:"PLINTH_CNPGI_KUBECONFIG" flag:"kubeconfig" usage:"kubeconfig to read ObjectStore resources (barmanObjectName) and their Secrets with; empty: none, unless in-cluster"`
	KubeInCluster bool   `env:"PLINTH_CNPGI_KUBE_IN_CLUSTER" flag:"kube-in-cluster" usage:"read ObjectStore resources (barmanObjectName) and their Secrets with the pod's service account"`

	OperatorConfig
	BackupConfig
}

// Defaults returns a Config with the plugin's own admin port; the gRPC address is derived
// from the plugin directory and name unless set.
func Defaults() Config {
	var c Config
	c.AdminAddr = "127.0.0.1:7106"
	c.PluginName = cnpgiplugin.DefaultName
	return c
}

// Resolve makes the directories absolute and fills the derived defaults; call it after
// config.Load and before Validate.
func (c *Config) Resolve() error {
	dir, err := filepath.Abs(c.PluginDir)
	if err != nil {
		return fmt.Errorf("PLINTH_CNPGI_PLUGIN_DIR (-plugin-dir): %w", err)
	}
	c.PluginDir = dir
	if c.GRPCAddr == "" {
		c.GRPCAddr = "unix://" + c.Socket()
	}
	home := filepath.Dir(dir)
	for _, p := range []struct {
		dst *string
		def string
	}{{&c.DefaultStoreDir, filepath.Join(home, "cnpgi-store")}, {&c.SpoolDir, filepath.Join(home, "cnpgi-spool")}} {
		if *p.dst == "" {
			*p.dst = p.def
		}
		if *p.dst, err = filepath.Abs(*p.dst); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks everything before anything starts and reports every problem at once.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate(), config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL), c.OperatorConfig.validate(), c.BackupConfig.validate()}
	errs = append(errs, c.ValidateName())
	if network, path, err := config.ParseListenAddr(c.GRPCAddr); err == nil && network == "unix" && filepath.Base(path) != c.PluginName {
		errs = append(errs, fmt.Errorf("PLINTH_GRPC_ADDR (-grpc-addr): the socket must be named after the plugin (%s): CloudNativePG dials <socket dir>/<plugin name>", c.PluginName))
	}
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_CNPGI_CONFIG (-config): %w", err))
		}
	}
	if c.Kubeconfig != "" && c.KubeInCluster {
		errs = append(errs, errors.New("PLINTH_CNPGI_KUBECONFIG and PLINTH_CNPGI_KUBE_IN_CLUSTER exclude each other"))
	}
	if c.WALTimeout < time.Second {
		errs = append(errs, errors.New("PLINTH_CNPGI_WAL_TIMEOUT (-wal-timeout): must be at least 1s"))
	}
	return errors.Join(errs...)
}
