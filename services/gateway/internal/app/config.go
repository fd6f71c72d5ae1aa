// Package app wires the gateway: its config, the backend connections, the token verifier,
// the gRPC server (proxy, health, reflection) and the one HTTP port in front of it.
package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/gateway/internal/front"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Config is the gateway binary's configuration (see the README's table).
type Config struct {
	// GRPC is the gateway's port (gRPC, gRPC-Web, Connect and the console on one listener).
	config.GRPC
	config.Admin
	config.NATS
	config.Telemetry

	BackendAuth          string `env:"PLINTH_AUTH_ADDR" renamed:"PLINTH_GATEWAY_BACKEND_AUTH" flag:"auth-addr" usage:"auth's gRPC address (host:port or unix:///path; its gateway listener, PLINTH_AUTH_GATEWAY_ADDR); also checks every token (one name with stats, kaas and vagrant-server)"`
	BackendStats         string `env:"PLINTH_GATEWAY_BACKEND_STATS" flag:"backend-stats" usage:"stats's gRPC address"`
	BackendKaas          string `env:"PLINTH_GATEWAY_BACKEND_KAAS" flag:"backend-kaas" usage:"kaas's gRPC address"`
	BackendVagrantServer string `env:"PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER" flag:"backend-vagrant-server" usage:"vagrant-server's gRPC address"`
	BackendLvmdAgent     string `env:"PLINTH_GATEWAY_BACKEND_LVMD_AGENT" flag:"backend-lvmd-agent" usage:"lvmd-agent's gRPC address (its unix socket: unix:///path/lvmd.sock)"`
	BackendCNPGIPlugin   string `env:"PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN" flag:"backend-cnpgi-plugin" usage:"cnpgi-plugin's gRPC address (its unix socket: unix:///path/plugins/<name>)"`
	BackendTLSDir        string `env:"PLINTH_GATEWAY_BACKEND_TLS_DIR" flag:"backend-tls-dir" usage:"a directory of mutual-TLS client pairs, laid out as the certs volume: a host:port backend with <dir>/<backend>/client.crt is dialled with TLS 1.3, presenting client.crt and client.key, trusting server.crt alone, server name <backend> (unix sockets stay plaintext)"`

	UnaryTimeout      time.Duration `env:"PLINTH_GATEWAY_UNARY_TIMEOUT" flag:"unary-timeout" usage:"deadline of every unary call the client sent without a shorter one (streams have none); unset: the route table's, as in Envoy (60s, cnpgi-plugin 15m)"`
	TokenCacheTTL     time.Duration `env:"PLINTH_GATEWAY_TOKEN_CACHE_TTL" flag:"token-cache-ttl" default:"10s" usage:"how long auth's yes for a token is reused (at most 30s; revocations drop it at once; 0 asks auth every call; without NATS always 0)"`
	CORSOrigins       []string      `env:"PLINTH_GATEWAY_CORS_ORIGINS" flag:"cors-origins" default:"*" usage:"origins browsers may call from (comma separated, e.g. https://console.example); * allows all (tokens are never cookies)"`
	MaxMessageBytes   int           `env:"PLINTH_GATEWAY_MAX_MESSAGE_BYTES" flag:"max-message-bytes" default:"16777216" usage:"largest response message relayed; also caps every route's request limit (4 MiB, routes.MaxRequestBytes)"`
	IdleTimeout       time.Duration `env:"PLINTH_GATEWAY_IDLE_TIMEOUT" flag:"idle-timeout" usage:"a connection (HTTP/1.1 keep-alive, HTTP/2) that carries no request for this long is closed (default 2m, routes.IdleTimeout)"`
	MaxConnsPerClient int           `env:"PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT" flag:"max-conns-per-client" usage:"most connections one client address (an IPv6 client's /64) holds at once; more are closed at accept (default 64, routes.MaxConnsPerClient)"`
	MaxCallsPerClient int           `env:"PLINTH_GATEWAY_MAX_CALLS_PER_CLIENT" flag:"max-calls-per-client" usage:"most calls (streams included) one client address has in progress across its connections; more are refused with ResourceExhausted (default 512; one connection carries at most 256)"`
	MaxConns          int           `env:"PLINTH_GATEWAY_MAX_CONNS" flag:"max-conns" usage:"most connections the gateway's port holds at once; more are closed at accept (default 2048, routes.MaxConns)"`

	KoorAddr  string `env:"PLINTH_GATEWAY_KOOR_ADDR" flag:"koor-addr" usage:"a second port serving the Koor data-control-center UI build of PLINTH_GATEWAY_KOOR_UI_DIR at / and the same /api surface (host:port; unset: off)"`
	KoorUIDir string `env:"PLINTH_GATEWAY_KOOR_UI_DIR" flag:"koor-ui-dir" usage:"a Koor data-control-center UI build (its .output/public, with index.html) for PLINTH_GATEWAY_KOOR_ADDR"`
}

// The connection limits' setting names, as their tags spell them: the metrics' help and the
// refusal of a call over its cap name them.
const (
	envMaxConnsPerClient = "PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT"
	envMaxCallsPerClient = "PLINTH_GATEWAY_MAX_CALLS_PER_CLIENT"
	envMaxConns          = "PLINTH_GATEWAY_MAX_CONNS"
)

// Defaults returns a Config with the gateway's own ports and the connection limits both
// gateways share (routes: the generated Envoy configs carry the same); Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr = "127.0.0.1:8080", "127.0.0.1:8180"
	c.IdleTimeout = routes.IdleTimeout
	c.MaxConns, c.MaxConnsPerClient = routes.MaxConns, routes.MaxConnsPerClient
	c.MaxCallsPerClient = front.DefaultMaxCallsPerClient
	return c
}

// BackendEnv names the variable that configures a backend of the route table.
var BackendEnv = routes.BackendEnv

// Backends maps each configured backend to its address.
func (c *Config) Backends() map[string]string {
	all := map[string]string{
		routes.Auth: c.BackendAuth, routes.Stats: c.BackendStats, routes.Kaas: c.BackendKaas,
		routes.VagrantServer: c.BackendVagrantServer, routes.LvmdAgent: c.BackendLvmdAgent,
		routes.CNPGIPlugin: c.BackendCNPGIPlugin,
	}
	out := map[string]string{}
	for name, addr := range all {
		if addr != "" {
			out[name] = addr
		}
	}
	return out
}

// Validate checks everything before anything starts, reporting every problem at once.
func (c *Config) Validate() error {
	errs := []error{c.GRPC.Validate(), c.Admin.Validate(), c.NATS.Validate(), c.Telemetry.Validate()}
	for name, addr := range c.Backends() {
		if _, _, err := config.ParseListenAddr(addr); err != nil || strings.HasSuffix(addr, ":0") {
			errs = append(errs, fmt.Errorf("%s: %q must be host:port or unix:///abs/path", BackendEnv(name), addr))
		}
	}
	if _, err := c.BackendTLS(); err != nil {
		errs = append(errs, err)
	}
	if c.UnaryTimeout < 0 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_UNARY_TIMEOUT: must not be negative (e.g. 30s; unset uses the route table's)"))
	}
	if c.TokenCacheTTL < 0 || c.TokenCacheTTL > authn.MaxCacheTTL {
		errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_TOKEN_CACHE_TTL: must be between 0 and %v", authn.MaxCacheTTL))
	}
	if c.MaxMessageBytes < 1<<10 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_MAX_MESSAGE_BYTES: must be at least 1024"))
	}
	if c.IdleTimeout < time.Second {
		errs = append(errs, errors.New("PLINTH_GATEWAY_IDLE_TIMEOUT: must be at least 1s (e.g. 2m)"))
	}
	if c.MaxConns < 1 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_MAX_CONNS: must be at least 1"))
	}
	if c.MaxConnsPerClient < 1 || c.MaxConnsPerClient > c.MaxConns {
		errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT: must be between 1 and PLINTH_GATEWAY_MAX_CONNS (%d)", c.MaxConns))
	}
	if c.MaxCallsPerClient < front.MaxConcurrentStreams {
		errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_MAX_CALLS_PER_CLIENT: must be at least %d (what one connection may carry)", front.MaxConcurrentStreams))
	}
	if (c.KoorAddr == "") != (c.KoorUIDir == "") {
		errs = append(errs, errors.New("PLINTH_GATEWAY_KOOR_ADDR and PLINTH_GATEWAY_KOOR_UI_DIR: set both (the Koor UI's port and its build) or neither"))
	} else if c.KoorAddr != "" {
		if _, _, err := config.ParseListenAddr(c.KoorAddr); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_KOOR_ADDR: %w", err))
		}
	}
	if len(c.CORSOrigins) == 0 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_CORS_ORIGINS: name at least one origin, or *"))
	}
	return errors.Join(errs...)
}
