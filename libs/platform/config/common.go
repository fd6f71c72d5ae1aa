package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Names of the settings every Plinth binary shares; the launcher sets these variables.
const (
	EnvGRPCAddr          = "PLINTH_GRPC_ADDR"
	EnvAdminAddr         = "PLINTH_ADMIN_ADDR"
	EnvDatabaseURL       = "PLINTH_DATABASE_URL"
	EnvNATSURL           = "PLINTH_NATS_URL"
	EnvNATSUser          = "PLINTH_NATS_USER"
	EnvNATSPassword      = "PLINTH_NATS_PASSWORD_FILE"
	EnvLogFormat         = "PLINTH_LOG_FORMAT"
	EnvLogLevel          = "PLINTH_LOG_LEVEL"
	EnvOTLPEndpoint      = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvShutdownTimeout   = "PLINTH_SHUTDOWN_TIMEOUT"
	EnvLogCalls          = "PLINTH_LOG_CALLS"
	EnvMaxConnsPerClient = "PLINTH_MAX_CONNS_PER_CLIENT"
	EnvMaxCallsPerClient = "PLINTH_MAX_CALLS_PER_CLIENT"
)

// AdminOff is the PLINTH_ADMIN_ADDR value that disables the admin HTTP server.
const AdminOff = "off"

// The parts below are the shared settings, one struct per concern. A binary's Config embeds
// the parts it needs (a runner that serves no gRPC embeds Telemetry and Admin only) and
// calls each part's Validate from its own; Common embeds them all.

// Telemetry holds the logging and tracing settings every binary has.
type Telemetry struct {
	// LogFormat is json, text, or auto (text when stderr is a terminal, else json).
	LogFormat string `env:"PLINTH_LOG_FORMAT" flag:"log-format" default:"auto" usage:"log format: json, text or auto (text on a terminal)"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"PLINTH_LOG_LEVEL" flag:"log-level" default:"info" usage:"log level: debug, info, warn or error"`
	// OTLPEndpoint is the OTLP/gRPC collector URL; traces are exported only when it is set.
	OTLPEndpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT" flag:"otlp-endpoint" usage:"OTLP/gRPC trace collector URL (http://host:4317); empty: no export"`
}

// Validate checks the telemetry settings.
func (t *Telemetry) Validate() error {
	var p problems
	p.check(EnvLogFormat, "log-format", oneOf(t.LogFormat, "auto", "json", "text"))
	p.check(EnvLogLevel, "log-level", oneOf(t.LogLevel, "debug", "info", "warn", "error"))
	if t.OTLPEndpoint != "" {
		p.check(EnvOTLPEndpoint, "otlp-endpoint", checkOTLPEndpoint(t.OTLPEndpoint))
	}
	return p.err()
}

// Admin holds how an operator runs the process: its admin HTTP address and how long a
// graceful shutdown may take.
type Admin struct {
	// AdminAddr is where /metrics, /healthz and /readyz are served: "host:port" or "off".
	AdminAddr string `env:"PLINTH_ADMIN_ADDR" flag:"admin-addr" usage:"admin HTTP address (/metrics, /healthz, /readyz): host:port or off"`
	// ShutdownTimeout bounds graceful shutdown, after which in-flight work is cut.
	ShutdownTimeout time.Duration `env:"PLINTH_SHUTDOWN_TIMEOUT" flag:"shutdown-timeout" default:"15s" usage:"graceful shutdown deadline"`
}

// Validate checks the admin settings.
func (a *Admin) Validate() error {
	var p problems
	if a.AdminAddr != "" && a.AdminAddr != AdminOff {
		p.check(EnvAdminAddr, "admin-addr", checkTCPAddr(a.AdminAddr))
	}
	if a.ShutdownTimeout <= 0 {
		p.check(EnvShutdownTimeout, "shutdown-timeout", fmt.Errorf("%s must be positive (e.g. 15s)", a.ShutdownTimeout))
	}
	return p.err()
}

// GRPC holds the gRPC listener of a service.
type GRPC struct {
	// GRPCAddr is where the gRPC server listens: "host:port" or "unix:///abs/path.sock".
	GRPCAddr string `env:"PLINTH_GRPC_ADDR" flag:"grpc-addr" usage:"gRPC listen address: host:port or unix:///abs/path.sock"`
	// LogCalls is "all" to log every finished call at INFO; empty logs successful calls at
	// DEBUG unless slow, and failed calls at INFO or above.
	LogCalls string `env:"PLINTH_LOG_CALLS" flag:"log-calls" usage:"all: log every gRPC call at INFO; empty: successful calls at DEBUG unless slow (1s), failures at INFO/WARN"`
}

// Validate checks the listen address.
func (g *GRPC) Validate() error {
	var p problems
	p.check(EnvGRPCAddr, "grpc-addr", checkListenAddr(g.GRPCAddr))
	if g.LogCalls != "" {
		p.check(EnvLogCalls, "log-calls", oneOf(g.LogCalls, "all"))
	}
	return p.err()
}

// The defaults of ClientLimits (libs/platform/server explains them).
const (
	DefaultMaxConnsPerClient = 64
	DefaultMaxCallsPerClient = 2048
	// MinCallsPerClient is what one connection may carry (server.DefaultMaxConcurrentStreams):
	// a lower call cap would refuse calls one well-behaved connection makes.
	MinCallsPerClient = 256
)

// ClientLimits bound what one client address (an IPv6 client's /64) holds on a service's TCP
// gRPC ports: connections, closed at accept over their cap, and calls in progress across
// them, refused with ResourceExhausted over theirs. Unix sockets are not capped: every local
// peer has the same empty address there. The gateway has its own (PLINTH_GATEWAY_MAX_*).
type ClientLimits struct {
	// MaxConnsPerClient is the most connections one client address holds at once.
	MaxConnsPerClient int `env:"PLINTH_MAX_CONNS_PER_CLIENT" flag:"max-conns-per-client" default:"64" usage:"most connections one client address (an IPv6 client's /64) holds on the gRPC port at once; more are closed at accept (unix sockets: no cap)"`
	// MaxCallsPerClient is the most calls one client address has in progress at once.
	MaxCallsPerClient int `env:"PLINTH_MAX_CALLS_PER_CLIENT" flag:"max-calls-per-client" default:"2048" usage:"most calls (streams included) one client address has in progress across its connections; more are refused with ResourceExhausted (at least 256; the gateway relays up to 8 × 256)"`
}

// Validate checks the limits.
func (l *ClientLimits) Validate() error {
	var p problems
	if l.MaxConnsPerClient < 1 {
		p.check(EnvMaxConnsPerClient, "max-conns-per-client", fmt.Errorf("%d: must be at least 1", l.MaxConnsPerClient))
	}
	if l.MaxCallsPerClient < MinCallsPerClient {
		p.check(EnvMaxCallsPerClient, "max-calls-per-client", fmt.Errorf("%d: must be at least %d (what one connection may carry)", l.MaxCallsPerClient, MinCallsPerClient))
	}
	return p.err()
}

// Database holds the Postgres connection of a service; the service uses its own schema in it.
type Database struct {
	// DatabaseURL is the Postgres connection string.
	DatabaseURL string `env:"PLINTH_DATABASE_URL" flag:"database-url" secret:"url" usage:"Postgres URL (postgres://user:pass@host:port/db)"`
}

// Validate checks the URL's form when one is set; a binary that needs it also checks Required.
func (d *Database) Validate() error {
	var p problems
	if d.DatabaseURL != "" {
		p.check(EnvDatabaseURL, "database-url", checkDatabaseURL(d.DatabaseURL))
	}
	return p.err()
}

// NATS holds the NATS connection of a service: the server and, when it requires them, the
// service's credentials. The password is read from a file (a Kubernetes or compose secret,
// or the one `make up` generates), never from the environment, so it appears in no env dump.
type NATS struct {
	// NATSURL is the NATS server URL (comma-separated for a cluster).
	NATSURL string `env:"PLINTH_NATS_URL" flag:"nats-url" secret:"url" usage:"NATS URL with JetStream (nats://host:4222)"`
	// NATSUser is the user the service connects as; empty connects without credentials.
	NATSUser string `env:"PLINTH_NATS_USER" flag:"nats-user" usage:"NATS user (the server's permissions say what it may publish and read); empty: no credentials"`
	// NATSPasswordFile holds NATSUser's password (trailing newline ignored; read at connect).
	NATSPasswordFile string `env:"PLINTH_NATS_PASSWORD_FILE" flag:"nats-password-file" usage:"file holding the NATS user's password (required with PLINTH_NATS_USER)"`
}

// maxNATSUser bounds a user name: it becomes part of the client's inbox subjects.
const maxNATSUser = 64

// Validate checks the URL's form when one is set, and that a user comes with a password file
// and is a plain name; a binary that needs the URL also checks Required.
func (n *NATS) Validate() error {
	var p problems
	if n.NATSURL != "" {
		p.check(EnvNATSURL, "nats-url", checkNATSURL(n.NATSURL))
	}
	if n.NATSUser != "" {
		p.check(EnvNATSUser, "nats-user", checkNATSUser(n.NATSUser))
		if n.NATSPasswordFile == "" {
			p.check(EnvNATSPassword, "nats-password-file", errors.New("required with PLINTH_NATS_USER"))
		}
	} else if n.NATSPasswordFile != "" {
		p.check(EnvNATSUser, "nats-user", errors.New("required with PLINTH_NATS_PASSWORD_FILE"))
	}
	return p.err()
}

// NATSPassword reads the user's password from NATSPasswordFile ("" when no user is set).
// Errors name the user and the file, never the content.
func (n *NATS) NATSPassword() (string, error) {
	if n.NATSUser == "" {
		return "", nil
	}
	b, err := os.ReadFile(n.NATSPasswordFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s (-nats-password-file): the password of NATS user %s: read %s: %w",
			EnvNATSPassword, n.NATSUser, n.NATSPasswordFile, err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("%s (-nats-password-file): the password of NATS user %s: %s is empty",
			EnvNATSPassword, n.NATSUser, n.NATSPasswordFile)
	}
	return pw, nil
}

// checkNATSUser accepts a name usable as a subject token: letters, digits, '-' and '_'.
func checkNATSUser(u string) error {
	if len(u) > maxNATSUser {
		return fmt.Errorf("longer than %d bytes", maxNATSUser)
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%q: only letters, digits, '-' and '_'", u)
		}
	}
	return nil
}

// Common is every part together: what a gRPC service with a database and events embeds.
// Set GRPCAddr and AdminAddr to the service's default ports before calling Load.
type Common struct {
	GRPC
	ClientLimits
	Admin
	Database
	NATS
	Telemetry
}

// Validate checks every part and returns all problems at once, each naming the variable and
// flag to fix. It does not require DatabaseURL or NATSURL: a service that needs them checks
// with Required.
func (c *Common) Validate() error {
	return errors.Join(c.GRPC.Validate(), c.ClientLimits.Validate(), c.Admin.Validate(), c.Database.Validate(), c.NATS.Validate(), c.Telemetry.Validate())
}

// Required returns an error naming env and flag when value is empty; use it in a service's
// Validate for settings it cannot run without, such as PLINTH_DATABASE_URL.
func Required(env, flag, value string) error {
	if value == "" {
		return fmt.Errorf("%s (-%s): required but not set", env, flag)
	}
	return nil
}

// problems collects validation errors, each prefixed with the setting's names.
type problems []error

func (p *problems) check(env, flag string, err error) {
	if err != nil {
		*p = append(*p, fmt.Errorf("%s (-%s): %w", env, flag, err))
	}
}

func (p problems) err() error { return errors.Join(p...) }

// TelemetrySettings returns the telemetry part; a Config that embeds Telemetry (or Common)
// has it too, which is how service.Main finds the logging and tracing settings.
func (t Telemetry) TelemetrySettings() Telemetry { return t }
