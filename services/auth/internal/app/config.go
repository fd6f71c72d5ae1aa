// Package app wires the auth service: config, store, NATS, outbox relay, gRPC servers and the
// background purge. It holds no business rules.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
	authgrpc "github.com/plinth-dev/plinth/services/auth/internal/grpc"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/sso"
)

// Config is the auth binary's configuration (see the README's table).
type Config struct {
	config.Common

	AdminPassword   string        `env:"PLINTH_ADMIN_PASSWORD" secret:"true" usage:"password for the first user, admin, created when there are no users (empty: generate one and print it once)"`
	TokenTTL        time.Duration `env:"PLINTH_AUTH_TOKEN_TTL" flag:"token-ttl" default:"26h" usage:"lifetime of issued tokens"`
	LockPairAfter   int           `env:"PLINTH_AUTH_LOCK_PAIR_AFTER" flag:"lock-pair-after" default:"5" usage:"failed logins of one username from one client address before that pair is throttled"`
	LockAddrAfter   int           `env:"PLINTH_AUTH_LOCK_ADDR_AFTER" flag:"lock-addr-after" default:"20" usage:"failed logins from one client address, any username, before it is throttled"`
	LockBase        time.Duration `env:"PLINTH_AUTH_LOCK_BASE" flag:"lock-base" default:"30s" usage:"first throttle interval; doubles with each further failure"`
	LockMax         time.Duration `env:"PLINTH_AUTH_LOCK_MAX" flag:"lock-max" default:"1h" usage:"longest throttle interval"`
	TrustedProxies  []string      `env:"PLINTH_AUTH_TRUSTED_PROXIES" flag:"trusted-proxies" usage:"CIDRs of proxies whose x-forwarded-for is believed on the gRPC port; never loopback (every local account connects from there): the gateway uses the gateway listener"`
	GatewayAddr     string        `env:"PLINTH_AUTH_GATEWAY_ADDR" flag:"gateway-addr" usage:"a second gRPC listener for the gateway alone, whose x-forwarded-for is believed: unix:///abs/path (mode 0600: auth's own user only) or host:port with mutual TLS (PLINTH_AUTH_GATEWAY_TLS_*); empty: none"`
	GatewayTLSCert  string        `env:"PLINTH_AUTH_GATEWAY_TLS_CERT" flag:"gateway-tls-cert" usage:"PEM certificate of the gateway listener (required when PLINTH_AUTH_GATEWAY_ADDR is host:port)"`
	GatewayTLSKey   string        `env:"PLINTH_AUTH_GATEWAY_TLS_KEY" flag:"gateway-tls-key" usage:"its PEM key"`
	GatewayClientCA string        `env:"PLINTH_AUTH_GATEWAY_TLS_CLIENT_CA" flag:"gateway-tls-client-ca" usage:"PEM certificate(s) the gateway's client certificate must be or chain to: the gateway's identity"`
	PublicPaths     []string      `env:"PLINTH_AUTH_PUBLIC_PATHS" flag:"public-paths" usage:"gateway paths allowed without a token (ext_authz); empty: login, health, reflection"`
	PurgeInterval   time.Duration `env:"PLINTH_AUTH_PURGE_INTERVAL" flag:"purge-interval" default:"10m" usage:"how often expired tokens and stale counters are deleted"`
	HashMemoryKiB   int           `env:"PLINTH_AUTH_ARGON2_MEMORY_KIB" flag:"argon2-memory-kib" default:"19456" usage:"argon2id memory (KiB); raising it rehashes on next login"`
	HashIterations  int           `env:"PLINTH_AUTH_ARGON2_ITERATIONS" flag:"argon2-iterations" default:"2" usage:"argon2id iterations"`
	HashParallelism int           `env:"PLINTH_AUTH_ARGON2_PARALLELISM" flag:"argon2-parallelism" default:"1" usage:"argon2id lanes"`
	HashConcurrency int           `env:"PLINTH_AUTH_ARGON2_CONCURRENCY" flag:"argon2-concurrency" default:"0" usage:"logins hashing at once (0: GOMAXPROCS, the cores auth may use)"`
	HashQueue       int           `env:"PLINTH_AUTH_ARGON2_QUEUE" flag:"argon2-queue" default:"0" usage:"logins waiting to hash beyond those; more are refused with ResourceExhausted (0: twice the concurrency)"`
	MaxTokens       int           `env:"PLINTH_AUTH_MAX_TOKENS_PER_USER" flag:"max-tokens-per-user" default:"100" usage:"live (unexpired, unrevoked) tokens one user may hold; a login beyond is refused with ResourceExhausted (0: no limit)"`

	OIDCProvidersFile string        `env:"PLINTH_AUTH_OIDC_PROVIDERS_FILE" flag:"oidc-providers-file" usage:"JSON file of OpenID Connect providers (issuer, client id, client secret file, scopes, redirect URLs, claim to role mapping; see the README); empty: none"`
	OIDCStateTTL      time.Duration `env:"PLINTH_AUTH_OIDC_STATE_TTL" flag:"oidc-state-ttl" default:"10m" usage:"how long a sign-in begun at an OpenID provider waits for its callback"`
	PasswordLogin     bool          `env:"PLINTH_AUTH_PASSWORD_LOGIN" flag:"password-login" default:"true" usage:"whether users sign in with a username and password (false: through an OpenID provider only; the admin CLI still works)"`
}

// Defaults returns a Config with the auth service's own ports; Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr = "127.0.0.1:7001", "127.0.0.1:7101"
	return c
}

// Validate checks everything before anything starts. The NATS URL is checked by ValidateServe:
// the users CLI needs only the database.
func (c *Config) Validate() error {
	errs := []error{c.Common.Validate()}
	if err := config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.TokenTTL < time.Minute {
		errs = append(errs, errors.New("PLINTH_AUTH_TOKEN_TTL: must be at least 1m"))
	}
	if c.PurgeInterval < time.Second {
		errs = append(errs, errors.New("PLINTH_AUTH_PURGE_INTERVAL: must be at least 1s"))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, errors.New("PLINTH_AUTH_MAX_TOKENS_PER_USER: must not be negative (0: no limit)"))
	}
	if c.OIDCStateTTL < 10*time.Second || c.OIDCStateTTL > time.Hour {
		errs = append(errs, errors.New("PLINTH_AUTH_OIDC_STATE_TTL: must be between 10s and 1h"))
	}
	if !c.PasswordLogin && c.OIDCProvidersFile == "" {
		errs = append(errs, errors.New("PLINTH_AUTH_PASSWORD_LOGIN=false needs PLINTH_AUTH_OIDC_PROVIDERS_FILE: nobody could sign in"))
	}
	if c.OIDCProvidersFile != "" {
		if _, err := sso.LoadProviders(c.OIDCProvidersFile); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_AUTH_OIDC_PROVIDERS_FILE: %w", err))
		}
	}
	if c.HashConcurrency < 0 || c.HashQueue < 0 {
		errs = append(errs, errors.New("PLINTH_AUTH_ARGON2_CONCURRENCY, PLINTH_AUTH_ARGON2_QUEUE: must not be negative (0: the default)"))
	}
	if err := c.HashParams().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("PLINTH_AUTH_ARGON2_*: %w", err))
	}
	if err := c.Lockout().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("PLINTH_AUTH_LOCK_*: %w", err))
	}
	if _, err := authgrpc.NewClientAddress(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("PLINTH_AUTH_TRUSTED_PROXIES: %w", err))
	}
	errs = append(errs, c.validateGateway())
	if c.AdminPassword != "" {
		if err := identity.ValidatePassword(c.AdminPassword); err != nil {
			errs = append(errs, fmt.Errorf("PLINTH_ADMIN_PASSWORD: %w", err))
		}
	}
	return errors.Join(errs...)
}

// HashParams are the configured argon2id parameters.
func (c *Config) HashParams() identity.HashParams {
	p := identity.DefaultHashParams()
	p.Memory, p.Iterations, p.Parallelism = uint32(c.HashMemoryKiB), uint32(c.HashIterations), uint8(c.HashParallelism)
	return p
}

// Lockout is the configured lockout policy.
func (c *Config) Lockout() identity.LockoutPolicy {
	p := identity.DefaultLockoutPolicy()
	p.PairThreshold, p.AddrThreshold, p.BaseDelay, p.MaxDelay = c.LockPairAfter, c.LockAddrAfter, c.LockBase, c.LockMax
	return p
}

// identityOptions are the identity rules' settings.
func (c *Config) identityOptions(log *slog.Logger) identity.Options {
	return identity.Options{Hash: c.HashParams(), Lockout: c.Lockout(), TokenTTL: c.TokenTTL, Logger: log,
		HashConcurrency: c.HashConcurrency, HashQueue: c.HashQueue, Tokens: identity.TokenQuota{MaxPerUser: c.MaxTokens},
		NoPasswordLogin: !c.PasswordLogin}
}

// publicPaths are the gateway paths ext_authz allows without a token.
func (c *Config) publicPaths() []string {
	if len(c.PublicPaths) == 0 {
		return authgrpc.DefaultPublicPaths()
	}
	return c.PublicPaths
}

// ValidateServe is Validate plus what serving needs beyond the database.
func (c *Config) ValidateServe() error {
	return errors.Join(c.Validate(), config.Required(config.EnvNATSURL, "nats-url", c.NATSURL))
}

// signIn is the OpenID sign-in service over st and svc: the configured providers (none
// without PLINTH_AUTH_OIDC_PROVIDERS_FILE: ListProviders answers an empty list).
func (c *Config) signIn(st sso.States, svc *identity.Service, log *slog.Logger) (*sso.Service, error) {
	var ps []*sso.Provider
	if c.OIDCProvidersFile != "" {
		var err error
		if ps, err = sso.LoadProviders(c.OIDCProvidersFile); err != nil {
			return nil, fmt.Errorf("PLINTH_AUTH_OIDC_PROVIDERS_FILE: %w", err)
		}
	}
	return sso.NewService(ps, st, svc, sso.Options{StateTTL: c.OIDCStateTTL, PasswordLogin: c.PasswordLogin, Logger: log})
}
