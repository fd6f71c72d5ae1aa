// Package app wires lvmd-agent: configuration, lvm, the database, events, the backup jobs,
// the gRPC services on the unix socket (and optionally a mutual-TLS port) and the
// background loops. It holds no business rules.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	lvmdgrpc "github.com/plinth-dev/plinth/services/lvmd-agent/internal/grpc"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// DefaultSocket is lvmd's socket, where TopoLVM's node plugin looks by default.
const DefaultSocket = "/run/topolvm/lvmd.sock"

// Config is the agent's configuration (see the README's table).
type Config struct {
	config.Common

	ConfigFile         string        `env:"PLINTH_LVMD_CONFIG" flag:"config" default:"/etc/topolvm/lvmd.yaml" usage:"TopoLVM lvmd.yaml: device-classes, and socket-name unless PLINTH_GRPC_ADDR is set"`
	NodeName           string        `env:"PLINTH_LVMD_NODE_NAME" flag:"node-name" usage:"this node's name in events and jobs (default: the host name)"`
	NodeAddresses      []string      `env:"PLINTH_LVMD_NODE_ADDRESSES" flag:"node-addresses" usage:"addresses announced in heartbeats (default: the host's global unicast addresses)"`
	LVM                string        `env:"PLINTH_LVMD_LVM" flag:"lvm" default:"lvm" usage:"the lvm executable"`
	MetadataOnly       string        `env:"PLINTH_LVMD_METADATA_ONLY" flag:"metadata-only" default:"auto" usage:"run lvm without activation: auto (when the kernel has no device-mapper), true or false"`
	CommandTimeout     time.Duration `env:"PLINTH_LVMD_COMMAND_TIMEOUT" flag:"command-timeout" default:"2m" usage:"longest one lvm command may run before it is killed"`
	WatchInterval      time.Duration `env:"PLINTH_LVMD_WATCH_INTERVAL" flag:"watch-interval" default:"10m" usage:"Watch streams resend the capacity this often even without a change (lvmd: 10m)"`
	PollInterval       time.Duration `env:"PLINTH_LVMD_POLL_INTERVAL" flag:"poll-interval" default:"30s" usage:"how often lvm is compared with the recorded state, catching changes made outside the agent"`
	HeartbeatInterval  time.Duration `env:"PLINTH_LVMD_HEARTBEAT_INTERVAL" flag:"heartbeat-interval" default:"30s" usage:"how often the node heartbeat event is sent"`
	Compression        string        `env:"PLINTH_LVMD_COMPRESSION" flag:"compression" default:"zstd" usage:"compression of new backups: zstd, gzip, lz4, snappy or none"`
	CompressionThreads int           `env:"PLINTH_LVMD_COMPRESSION_THREADS" flag:"compression-threads" default:"2" usage:"zstd encoder threads per backup"`
	PartSizeMiB        int           `env:"PLINTH_LVMD_PART_SIZE_MIB" flag:"part-size-mib" default:"16" usage:"S3 multipart part size (MiB, at least 5)"`
	UploadConcurrency  int           `env:"PLINTH_LVMD_UPLOAD_CONCURRENCY" flag:"upload-concurrency" default:"4" usage:"parts uploaded in parallel per backup (memory: part size × this)"`
	TLSAddr            string        `env:"PLINTH_LVMD_TLS_ADDR" flag:"tls-addr" usage:"also serve on this TCP host:port with mutual TLS (empty: socket only)"`
	TLSCert            string        `env:"PLINTH_LVMD_TLS_CERT" flag:"tls-cert" usage:"server certificate (PEM) for the TLS port"`
	TLSKey             string        `env:"PLINTH_LVMD_TLS_KEY" flag:"tls-key" usage:"server key (PEM) for the TLS port"`
	TLSClientCA        string        `env:"PLINTH_LVMD_TLS_CLIENT_CA" flag:"tls-client-ca" usage:"CA certificates (PEM) client certificates must chain to"`

	DefaultS3Endpoint      string `env:"PLINTH_LVMD_DEFAULT_S3_ENDPOINT" flag:"default-s3-endpoint" usage:"S3 endpoint for backup and restore requests that name no endpoint and no credentials (make up: its dev radosgw); empty: such requests are refused, as lvmd does"`
	DefaultS3AccessKeyFile string `env:"PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE" flag:"default-s3-access-key-id-file" usage:"file holding the access key id for PLINTH_LVMD_DEFAULT_S3_ENDPOINT (read at start)"`
	DefaultS3SecretKeyFile string `env:"PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE" flag:"default-s3-secret-access-key-file" usage:"file holding the secret access key for PLINTH_LVMD_DEFAULT_S3_ENDPOINT (read at start)"`
	DefaultS3Bucket        string `env:"PLINTH_LVMD_DEFAULT_S3_BUCKET" flag:"default-s3-bucket" usage:"the default store's bucket, which the console puts first in a backup's path (empty: the one bucket the store lists for the agent's keys, if it lists exactly one)"`

	// classes is the parsed ConfigFile (Resolve).
	classes *deviceclass.Classes
	// warnings are the configuration file's ignored keys.
	warnings []string
}

// Defaults returns a Config with the agent's admin port; the socket comes from lvmd.yaml.
func Defaults() Config {
	var c Config
	c.AdminAddr = "127.0.0.1:7105"
	return c
}

// Resolve reads the device class file and derives the socket from its socket-name when
// PLINTH_GRPC_ADDR is not set. Call it after config.Load, before Validate.
func (c *Config) Resolve() error {
	data, err := os.ReadFile(c.ConfigFile)
	if err != nil {
		return fmt.Errorf("PLINTH_LVMD_CONFIG (-config): %w", err)
	}
	f, warnings, err := deviceclass.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.ConfigFile, err)
	}
	if c.classes, err = deviceclass.New(f); err != nil {
		return fmt.Errorf("%s: %w", c.ConfigFile, err)
	}
	c.warnings = warnings
	if c.GRPCAddr == "" {
		sock := f.SocketName
		if sock == "" {
			sock = DefaultSocket
		}
		if !filepath.IsAbs(sock) {
			return fmt.Errorf("%s: socket-name: %q must be an absolute path", c.ConfigFile, sock)
		}
		c.GRPCAddr = "unix://" + sock
	}
	if c.NodeName == "" {
		if c.NodeName, err = os.Hostname(); err != nil {
			return fmt.Errorf("PLINTH_LVMD_NODE_NAME: cannot read the host name: %w", err)
		}
	}
	return nil
}

// Validate checks everything before anything starts and reports every problem at once.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate(),
		config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL),
		config.Required(config.EnvNATSURL, "nats-url", c.NATSURL)}
	if len(c.NodeName) == 0 || len(c.NodeName) > 253 {
		errs = append(errs, errors.New("PLINTH_LVMD_NODE_NAME (-node-name): must be 1 to 253 characters"))
	}
	if _, err := c.metadataOnly(); err != nil {
		errs = append(errs, err)
	}
	if _, err := compression.ParseWritable(c.Compression); err != nil {
		errs = append(errs, fmt.Errorf("PLINTH_LVMD_COMPRESSION (-compression): %w", err))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"PLINTH_LVMD_COMMAND_TIMEOUT", c.CommandTimeout}, {"PLINTH_LVMD_WATCH_INTERVAL", c.WatchInterval},
		{"PLINTH_LVMD_POLL_INTERVAL", c.PollInterval}, {"PLINTH_LVMD_HEARTBEAT_INTERVAL", c.HeartbeatInterval}} {
		if d.v < time.Second {
			errs = append(errs, fmt.Errorf("%s: must be at least 1s", d.name))
		}
	}
	if c.PartSizeMiB < 5 || c.PartSizeMiB > 5<<10 {
		errs = append(errs, errors.New("PLINTH_LVMD_PART_SIZE_MIB: must be between 5 and 5120 (S3's limits)"))
	}
	if c.UploadConcurrency < 1 || c.CompressionThreads < 1 {
		errs = append(errs, errors.New("PLINTH_LVMD_UPLOAD_CONCURRENCY and PLINTH_LVMD_COMPRESSION_THREADS: must be at least 1"))
	}
	if c.TLSAddr != "" && (c.TLSCert == "" || c.TLSKey == "" || c.TLSClientCA == "") {
		errs = append(errs, errors.New("PLINTH_LVMD_TLS_ADDR: needs PLINTH_LVMD_TLS_CERT, PLINTH_LVMD_TLS_KEY and PLINTH_LVMD_TLS_CLIENT_CA (mutual TLS only)"))
	}
	if _, err := c.s3Default(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// s3Default reads the agent's default S3 store: nil when PLINTH_LVMD_DEFAULT_S3_ENDPOINT is
// unset; the endpoint needs both key files.
func (c *Config) s3Default() (*lvmdgrpc.S3Default, error) {
	if c.DefaultS3Endpoint == "" {
		if c.DefaultS3AccessKeyFile != "" || c.DefaultS3SecretKeyFile != "" || c.DefaultS3Bucket != "" {
			return nil, errors.New("PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE, _SECRET_ACCESS_KEY_FILE and _BUCKET: need PLINTH_LVMD_DEFAULT_S3_ENDPOINT")
		}
		return nil, nil
	}
	if u, err := url.Parse(c.DefaultS3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, errors.New("PLINTH_LVMD_DEFAULT_S3_ENDPOINT: want http(s)://host[:port] without credentials")
	}
	if c.DefaultS3Bucket != "" {
		if err := objectstore.ValidateBucket(c.DefaultS3Bucket); err != nil {
			return nil, fmt.Errorf("PLINTH_LVMD_DEFAULT_S3_BUCKET: %w", err)
		}
	}
	d := &lvmdgrpc.S3Default{Endpoint: c.DefaultS3Endpoint, Bucket: c.DefaultS3Bucket}
	for _, f := range []struct {
		name, path string
		to         *string
	}{{"PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE", c.DefaultS3AccessKeyFile, &d.AccessKeyID},
		{"PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE", c.DefaultS3SecretKeyFile, &d.SecretAccessKey}} {
		if f.path == "" {
			return nil, fmt.Errorf("%s: required with PLINTH_LVMD_DEFAULT_S3_ENDPOINT", f.name)
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if *f.to = strings.TrimRight(string(data), "\r\n"); *f.to == "" {
			return nil, fmt.Errorf("%s: %s is empty", f.name, f.path)
		}
	}
	return d, nil
}

// metadataOnly resolves PLINTH_LVMD_METADATA_ONLY.
func (c *Config) metadataOnly() (bool, error) {
	switch c.MetadataOnly {
	case "auto", "":
		return !lvm.HasDeviceMapper(), nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("PLINTH_LVMD_METADATA_ONLY (-metadata-only): %q is not auto, true or false", c.MetadataOnly)
}
