package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func validCommon() Common {
	var c Common
	c.GRPCAddr, c.AdminAddr, c.LogFormat, c.LogLevel, c.ShutdownTimeout = "127.0.0.1:7001", "127.0.0.1:7101", "auto", "info", 15*time.Second
	c.MaxConnsPerClient, c.MaxCallsPerClient = DefaultMaxConnsPerClient, DefaultMaxCallsPerClient
	return c
}

func TestCommonValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Common)
		want   string // "" means valid
	}{
		{"defaults", func(*Common) {}, ""},
		{"unix socket", func(c *Common) { c.GRPCAddr = "unix:///run/plinth/lvmd.sock" }, ""},
		{"all interfaces", func(c *Common) { c.GRPCAddr = ":7001" }, ""},
		{"port zero", func(c *Common) { c.GRPCAddr = "127.0.0.1:0" }, ""},
		{"admin off", func(c *Common) { c.AdminAddr = "off" }, ""},
		{"admin empty", func(c *Common) { c.AdminAddr = "" }, ""},
		{"full urls", func(c *Common) {
			c.DatabaseURL = "postgres://u:p@db:5432/plinth?sslmode=disable"
			c.NATSURL = "nats://n1:4222, tls://n2:4222"
			c.OTLPEndpoint = "http://127.0.0.1:4317"
		}, ""},
		{"keyword dsn", func(c *Common) { c.DatabaseURL = "host=db user=app dbname=plinth" }, ""},
		{"nats user", func(c *Common) { c.NATSUser, c.NATSPasswordFile = "vagrant-server", "/run/secrets/nats" }, ""},
		{"nats user without password", func(c *Common) { c.NATSUser = "auth" },
			"PLINTH_NATS_PASSWORD_FILE (-nats-password-file): required with PLINTH_NATS_USER"},
		{"nats password without user", func(c *Common) { c.NATSPasswordFile = "/run/secrets/nats" },
			"PLINTH_NATS_USER (-nats-user): required with PLINTH_NATS_PASSWORD_FILE"},
		{"nats user with a subject wildcard", func(c *Common) { c.NATSUser, c.NATSPasswordFile = "a.>", "/f" },
			"PLINTH_NATS_USER (-nats-user): \"a.>\": only letters, digits, '-' and '_'"},

		{"grpc addr missing", func(c *Common) { c.GRPCAddr = "" },
			"PLINTH_GRPC_ADDR (-grpc-addr): \"\" must be host:port or unix:///path"},
		{"grpc addr no port", func(c *Common) { c.GRPCAddr = "localhost" },
			"PLINTH_GRPC_ADDR (-grpc-addr): \"localhost\" must be host:port or unix:///path"},
		{"grpc addr bad port", func(c *Common) { c.GRPCAddr = "h:99999" }, "want a number 0-65535"},
		{"relative unix socket", func(c *Common) { c.GRPCAddr = "unix://.plinth/x.sock" },
			"PLINTH_GRPC_ADDR (-grpc-addr): \"unix://.plinth/x.sock\" must be unix:///absolute/path.sock"},
		{"admin unix", func(c *Common) { c.AdminAddr = "unix:///x" }, "PLINTH_ADMIN_ADDR (-admin-addr)"},
		{"database scheme", func(c *Common) { c.DatabaseURL = "mysql://u:topsecret@h/db" },
			"PLINTH_DATABASE_URL (-database-url): has scheme \"mysql\"; want postgres://"},
		{"database garbage", func(c *Common) { c.DatabaseURL = "topsecret" }, "PLINTH_DATABASE_URL (-database-url): must be a URL"},
		{"nats scheme", func(c *Common) { c.NATSURL = "http://n:4222" }, "PLINTH_NATS_URL (-nats-url): has scheme \"http\""},
		{"log format", func(c *Common) { c.LogFormat = "xml" },
			"PLINTH_LOG_FORMAT (-log-format): \"xml\" is not one of auto, json, text"},
		{"log level", func(c *Common) { c.LogLevel = "trace" },
			"PLINTH_LOG_LEVEL (-log-level): \"trace\" is not one of debug, info, warn, error"},
		{"otlp without scheme", func(c *Common) { c.OTLPEndpoint = "collector:4317" },
			"OTEL_EXPORTER_OTLP_ENDPOINT (-otlp-endpoint): \"collector:4317\" must be a URL like http://127.0.0.1:4317"},
		{"shutdown timeout", func(c *Common) { c.ShutdownTimeout = 0 },
			"PLINTH_SHUTDOWN_TIMEOUT (-shutdown-timeout): 0s must be positive"},
		{"one connection per client", func(c *Common) { c.MaxConnsPerClient, c.MaxCallsPerClient = 1, 256 }, ""},
		{"no connection per client", func(c *Common) { c.MaxConnsPerClient = 0 },
			"PLINTH_MAX_CONNS_PER_CLIENT (-max-conns-per-client): 0: must be at least 1"},
		{"calls per client under one connection's", func(c *Common) { c.MaxCallsPerClient = 255 },
			"PLINTH_MAX_CALLS_PER_CLIENT (-max-calls-per-client): 255: must be at least 256 (what one connection may carry)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCommon()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Errorf("Validate = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("Validate = %q, want it to contain %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "topsecret") {
				t.Errorf("validation error repeats a secret-bearing value: %v", err)
			}
		})
	}
}

func TestCommonValidateReportsAllProblems(t *testing.T) {
	var c Common
	c.GRPCAddr, c.LogFormat, c.LogLevel = "x", "xml", "loud"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate = nil")
	}
	for _, w := range []string{EnvGRPCAddr, EnvLogFormat, EnvLogLevel, EnvShutdownTimeout} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %s: %v", w, err)
		}
	}
}

func TestRequired(t *testing.T) {
	if err := Required(EnvDatabaseURL, "database-url", "postgres://h/db"); err != nil {
		t.Errorf("Required(set) = %v", err)
	}
	err := Required(EnvDatabaseURL, "database-url", "")
	if err == nil || err.Error() != "PLINTH_DATABASE_URL (-database-url): required but not set" {
		t.Errorf("Required(empty) = %v", err)
	}
}

func TestParseListenAddr(t *testing.T) {
	tests := []struct{ in, network, address string }{
		{"127.0.0.1:7001", "tcp", "127.0.0.1:7001"},
		{"[::1]:0", "tcp", "[::1]:0"},
		{"unix:///tmp/a/../b.sock", "unix", "/tmp/b.sock"},
	}
	for _, tt := range tests {
		n, a, err := ParseListenAddr(tt.in)
		if err != nil || n != tt.network || a != tt.address {
			t.Errorf("ParseListenAddr(%q) = %q, %q, %v; want %q, %q", tt.in, n, a, err, tt.network, tt.address)
		}
	}
}

func TestNATSPasswordNamesTheUserNotTheSecret(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/pw"
	if err := os.WriteFile(file, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := NATS{NATSUser: "auth", NATSPasswordFile: file}
	if pw, err := n.NATSPassword(); err != nil || pw != "s3cret-value" {
		t.Fatalf("%q %v", pw, err)
	}
	if pw, err := (&NATS{}).NATSPassword(); err != nil || pw != "" {
		t.Fatalf("no user: %q %v", pw, err)
	}
	for _, f := range []string{dir + "/missing", dir + "/empty"} {
		if err := os.WriteFile(dir+"/empty", []byte("\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		n.NATSPasswordFile = f
		_, err := n.NATSPassword()
		if err == nil || !strings.Contains(err.Error(), "NATS user auth") || !strings.Contains(err.Error(), "PLINTH_NATS_PASSWORD_FILE") {
			t.Errorf("%s: %v, want an error naming the user and the setting", f, err)
		}
	}
}
