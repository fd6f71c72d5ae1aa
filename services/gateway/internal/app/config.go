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
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Config is the gateway binary's configuration (see the README's table).
type Config struct {
	// GRPC is the gateway's port (gRPC, gRPC-Web, Connect and the console on one listener).
	config.GRPC
	config.Admin
	config.NATS
	config.Telemetry

	BackendAuth          string `env:"PLINTH_GATEWAY_BACKEND_AUTH" flag:"backend-auth" usage:"auth's gRPC address (host:port or unix:///path); also checks every token"`
	BackendStats         string `env:"PLINTH_GATEWAY_BACKEND_STATS" flag:"backend-stats" usage:"stats's gRPC address"`
	BackendKaas          string `env:"PLINTH_GATEWAY_BACKEND_KAAS" flag:"backend-kaas" usage:"kaas's gRPC address"`
	BackendVagrantServer string `env:"PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER" flag:"backend-vagrant-server" usage:"vagrant-server's gRPC address"`
	BackendLvmdAgent     string `env:"PLINTH_GATEWAY_BACKEND_LVMD_AGENT" flag:"backend-lvmd-agent" usage:"lvmd-agent's gRPC address (its unix socket: unix:///path/lvmd.sock)"`
	BackendCNPGIPlugin   string `env:"PLINTH_GATEWAY_BACKEND_CNPGI_PLUGIN" flag:"backend-cnpgi-plugin" usage:"cnpgi-plugin's gRPC address (its unix socket: unix:///path/plugins/<name>)"`

	UnaryTimeout    time.Duration `env:"PLINTH_GATEWAY_UNARY_TIMEOUT" flag:"unary-timeout" usage:"deadline of every unary call the client sent without a shorter one (streams have none); unset: the route table's, as in Envoy (60s, cnpgi-plugin 15m)"`
	TokenCacheTTL   time.Duration `env:"PLINTH_GATEWAY_TOKEN_CACHE_TTL" flag:"token-cache-ttl" default:"10s" usage:"how long auth's yes for a token is reused (at most 30s; revocations drop it at once; 0 asks auth every call; without NATS always 0)"`
	CORSOrigins     []string      `env:"PLINTH_GATEWAY_CORS_ORIGINS" flag:"cors-origins" default:"*" usage:"origins browsers may call from (comma separated, e.g. https://console.example); * allows all (tokens are never cookies)"`
	MaxMessageBytes int           `env:"PLINTH_GATEWAY_MAX_MESSAGE_BYTES" flag:"max-message-bytes" default:"16777216" usage:"largest message relayed either way"`
}

// Defaults returns a Config with the gateway's own ports; Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr = "127.0.0.1:8080", "127.0.0.1:8180"
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
	if c.UnaryTimeout < 0 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_UNARY_TIMEOUT: must not be negative (e.g. 30s; unset uses the route table's)"))
	}
	if c.TokenCacheTTL < 0 || c.TokenCacheTTL > authn.MaxCacheTTL {
		errs = append(errs, fmt.Errorf("PLINTH_GATEWAY_TOKEN_CACHE_TTL: must be between 0 and %v", authn.MaxCacheTTL))
	}
	if c.MaxMessageBytes < 1<<10 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_MAX_MESSAGE_BYTES: must be at least 1024"))
	}
	if len(c.CORSOrigins) == 0 {
		errs = append(errs, errors.New("PLINTH_GATEWAY_CORS_ORIGINS: name at least one origin, or *"))
	}
	return errors.Join(errs...)
}
