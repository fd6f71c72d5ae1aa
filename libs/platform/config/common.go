package config

import (
	"errors"
	"fmt"
	"time"
)

// Names of the settings every Plinth binary shares; the launcher sets these variables.
const (
	EnvGRPCAddr        = "PLINTH_GRPC_ADDR"
	EnvAdminAddr       = "PLINTH_ADMIN_ADDR"
	EnvDatabaseURL     = "PLINTH_DATABASE_URL"
	EnvNATSURL         = "PLINTH_NATS_URL"
	EnvLogFormat       = "PLINTH_LOG_FORMAT"
	EnvLogLevel        = "PLINTH_LOG_LEVEL"
	EnvOTLPEndpoint    = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvShutdownTimeout = "PLINTH_SHUTDOWN_TIMEOUT"
)

// AdminOff is the PLINTH_ADMIN_ADDR value that disables the admin HTTP server.
const AdminOff = "off"

// Common holds the settings every Plinth service binary shares. Embed it in the binary's
// Config; set GRPCAddr and AdminAddr to the service's default ports before calling Load.
type Common struct {
	// GRPCAddr is where the gRPC server listens: "host:port" or "unix:///abs/path.sock".
	GRPCAddr string `env:"PLINTH_GRPC_ADDR" flag:"grpc-addr" usage:"gRPC listen address: host:port or unix:///abs/path.sock"`
	// AdminAddr is where /metrics, /healthz and /readyz are served: "host:port" or "off".
	AdminAddr string `env:"PLINTH_ADMIN_ADDR" flag:"admin-addr" usage:"admin HTTP address (/metrics, /healthz, /readyz): host:port or off"`
	// DatabaseURL is the Postgres connection string; the service uses its own schema in it.
	DatabaseURL string `env:"PLINTH_DATABASE_URL" flag:"database-url" secret:"url" usage:"Postgres URL (postgres://user:pass@host:port/db)"`
	// NATSURL is the NATS server URL (comma-separated for a cluster).
	NATSURL string `env:"PLINTH_NATS_URL" flag:"nats-url" secret:"url" usage:"NATS URL with JetStream (nats://host:4222)"`
	// LogFormat is json, text, or auto (text when stderr is a terminal, else json).
	LogFormat string `env:"PLINTH_LOG_FORMAT" flag:"log-format" default:"auto" usage:"log format: json, text or auto (text on a terminal)"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"PLINTH_LOG_LEVEL" flag:"log-level" default:"info" usage:"log level: debug, info, warn or error"`
	// OTLPEndpoint is the OTLP/gRPC collector URL; traces are exported only when it is set.
	OTLPEndpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT" flag:"otlp-endpoint" usage:"OTLP/gRPC trace collector URL (http://host:4317); empty: no export"`
	// ShutdownTimeout bounds graceful shutdown, after which in-flight calls are cut.
	ShutdownTimeout time.Duration `env:"PLINTH_SHUTDOWN_TIMEOUT" flag:"shutdown-timeout" default:"15s" usage:"graceful shutdown deadline"`
}

// Validate checks every Common setting and returns all problems at once, each naming the
// variable and flag to fix. It does not require DatabaseURL or NATSURL: a service that needs
// them checks with Required.
func (c *Common) Validate() error {
	var errs []error
	check := func(env, flag string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (-%s): %w", env, flag, err))
		}
	}
	check(EnvGRPCAddr, "grpc-addr", checkListenAddr(c.GRPCAddr))
	if c.AdminAddr != "" && c.AdminAddr != AdminOff {
		check(EnvAdminAddr, "admin-addr", checkTCPAddr(c.AdminAddr))
	}
	if c.DatabaseURL != "" {
		check(EnvDatabaseURL, "database-url", checkDatabaseURL(c.DatabaseURL))
	}
	if c.NATSURL != "" {
		check(EnvNATSURL, "nats-url", checkNATSURL(c.NATSURL))
	}
	check(EnvLogFormat, "log-format", oneOf(c.LogFormat, "auto", "json", "text"))
	check(EnvLogLevel, "log-level", oneOf(c.LogLevel, "debug", "info", "warn", "error"))
	if c.OTLPEndpoint != "" {
		check(EnvOTLPEndpoint, "otlp-endpoint", checkOTLPEndpoint(c.OTLPEndpoint))
	}
	if c.ShutdownTimeout <= 0 {
		check(EnvShutdownTimeout, "shutdown-timeout", fmt.Errorf("%s must be positive (e.g. 15s)", c.ShutdownTimeout))
	}
	return errors.Join(errs...)
}

// Required returns an error naming env and flag when value is empty; use it in a service's
// Validate for settings it cannot run without, such as PLINTH_DATABASE_URL.
func Required(env, flag, value string) error {
	if value == "" {
		return fmt.Errorf("%s (-%s): required but not set", env, flag)
	}
	return nil
}
