// Package cli is the binary's `wal-archive` and `wal-restore` commands: archive_command and
// restore_command for any PostgreSQL, calling the plugin over its unix socket the way
// CloudNativePG's instance manager does.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Config is what the WAL commands need: where the plugin listens and which cluster (and so
// which store and server name) the WAL belongs to.
type Config struct {
	// The field order is the order of restore_command's flags (restore.Command, which fills
	// this Config and writes it with config.Args).
	Socket string `env:"PLINTH_CNPGI_SOCKET" flag:"socket" usage:"the plugin's unix socket (overrides -plugin-dir)"`
	// Endpoint is the server's own declaration of the plugin's name and socket directory.
	plugin.Endpoint
	ClusterFile string        `env:"PLINTH_CNPGI_CLUSTER_FILE" flag:"cluster-file" usage:"a CloudNativePG Cluster as JSON, sent as the cluster definition"`
	ObjectStore string        `env:"PLINTH_CNPGI_OBJECT_STORE" flag:"object-store" usage:"without -cluster-file: the store name (default: the plugin's default store)"`
	ServerName  string        `env:"PLINTH_CNPGI_SERVER_NAME" flag:"server-name" usage:"without -cluster-file: the server name (directory) in the store"`
	Timeout     time.Duration `env:"PLINTH_CNPGI_CLI_TIMEOUT" flag:"timeout" default:"10m" usage:"give up after this long"`
	CheckEmpty  string        `flag:"check-empty-wal-archive" usage:"wal-archive: send check_empty_wal_archive=true|false (default: not sent)"`
	Mode        string        `flag:"mode" default:"recovery" usage:"wal-restore: recovery or rewind"`
}

// IO is where the commands write.
type IO struct{ Err io.Writer }

// Run executes `wal-archive [flags] PATH`, `wal-restore [flags] NAME PATH` or
// `health [flags]`. Flags come first, in -name=value form. PATH may be relative: PostgreSQL runs the commands in PGDATA.
func Run(ctx context.Context, cmd string, args, environ []string, out IO) error {
	flags, pos := splitFlags(args)
	cfg := Config{Endpoint: plugin.Endpoint{PluginName: plugin.DefaultName}}
	header := fmt.Sprintf("usage: cnpgi-plugin %s [-name=value ...] %s", cmd, usageArgs(cmd))
	if ok, err := config.LoadOrUsage(&cfg, flags, environ, out.Err, header); !ok {
		return err
	}
	want := map[string]int{"wal-archive": 1, "wal-restore": 2, "health": 0}[cmd]
	if len(pos) != want {
		return fmt.Errorf("%s takes %s (got %d arguments)", cmd, usageArgs(cmd), len(pos))
	}
	if cmd == "health" {
		return health(ctx, cfg)
	}
	definition, err := cfg.clusterDefinition()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conn, err := cfg.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := handshake(ctx, conn, cfg.PluginName); err != nil {
		return err
	}
	client := walv1.NewWALClient(conn)
	switch cmd {
	case "wal-archive":
		return archive(ctx, client, cfg, definition, pos[0])
	default:
		return restore(ctx, client, cfg, definition, pos[0], pos[1])
	}
}

func usageArgs(cmd string) string {
	switch cmd {
	case "wal-archive":
		return "PATH (%p)"
	case "health":
		return "(no arguments)"
	}
	return "NAME PATH (%f %p)"
}

// healthTimeout bounds the health check: it is the sidecar's startup probe.
const healthTimeout = 5 * time.Second

// health checks that the plugin serves on its socket (grpc.health.v1, overall status
// SERVING): the injected sidecar's startup probe, since its socket is private to the Pod.
func health(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, min(cfg.Timeout, healthTimeout))
	defer cancel()
	conn, err := cfg.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health: %s", describe(err))
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: the plugin is %s", resp.GetStatus())
	}
	return nil
}

func archive(ctx context.Context, c walv1.WALClient, cfg Config, definition []byte, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	req := &walv1.WALArchiveRequest{ClusterDefinition: definition, SourceFileName: abs}
	switch cfg.CheckEmpty {
	case "":
	case "true", "false":
		v := cfg.CheckEmpty == "true"
		req.CheckEmptyWalArchive = &v
	default:
		return fmt.Errorf("-check-empty-wal-archive must be true or false, not %q", echo(cfg.CheckEmpty))
	}
	if _, err := c.Archive(ctx, req); err != nil {
		return fmt.Errorf("archive %s: %s", echo(filepath.Base(abs)), describe(err))
	}
	return nil
}

func restore(ctx context.Context, c walv1.WALClient, cfg Config, definition []byte, name, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	modes := map[string]walv1.WALRestoreRequest_Mode{"recovery": walv1.WALRestoreRequest_MODE_RECOVERY, "rewind": walv1.WALRestoreRequest_MODE_REWIND}
	mode, ok := modes[cfg.Mode]
	if !ok {
		return fmt.Errorf("-mode must be recovery or rewind, not %q", echo(cfg.Mode))
	}
	_, err = c.Restore(ctx, &walv1.WALRestoreRequest{ClusterDefinition: definition, SourceWalName: name, DestinationFileName: abs, Mode: mode})
	if err != nil {
		return fmt.Errorf("restore %s: %s", echo(name), describe(err))
	}
	return nil
}

// maxEcho bounds what an error repeats of the command's own arguments: PostgreSQL logs the
// message, and a WAL name is 24 characters (a history or backup label file a few more).
const maxEcho = 128

// echo is an argument as an error repeats it: at most maxEcho bytes.
func echo(arg string) string { return input.Truncate(arg, maxEcho) }

// describe turns a status into "message (Code)".
func describe(err error) string {
	st := status.Convert(err)
	if st.Code() == codes.Unknown {
		return err.Error()
	}
	return st.Message() + " (" + st.Code().String() + ")"
}

// clusterDefinition is the -cluster-file's content, or a minimal Cluster enabling the
// plugin with the given server name and store.
func (c Config) clusterDefinition() ([]byte, error) {
	if c.ClusterFile != "" {
		b, err := os.ReadFile(c.ClusterFile)
		if err != nil {
			return nil, fmt.Errorf("-cluster-file: %w", err)
		}
		return b, nil
	}
	if c.ServerName == "" {
		return nil, errors.New("give -server-name (PLINTH_CNPGI_SERVER_NAME) or -cluster-file (PLINTH_CNPGI_CLUSTER_FILE)")
	}
	params := map[string]string{"serverName": c.ServerName}
	if c.ObjectStore != "" {
		params["objectStore"] = c.ObjectStore
	}
	return json.Marshal(map[string]any{
		"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": c.ServerName},
		"spec":     map[string]any{"plugins": []any{map[string]any{"name": c.PluginName, "parameters": params}}},
	})
}

func (c Config) dial() (*grpc.ClientConn, error) {
	socket := c.Socket
	if socket == "" {
		socket = c.Endpoint.Socket()
	}
	abs, err := filepath.Abs(socket)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("plugin socket %s: %w (is the plugin running? set -socket or PLINTH_CNPGI_PLUGIN_DIR)", abs, err)
	}
	return grpc.NewClient("unix://"+abs, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// splitFlags keeps the leading -flags and returns the positional arguments after them.
func splitFlags(args []string) (flags, pos []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
		if len(a) < 2 || a[0] != '-' {
			return args[:i], args[i:]
		}
	}
	return args, nil
}
