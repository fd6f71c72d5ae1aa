// Package app wires the vagrant-server: config, store, NATS, outbox relay and the gRPC
// server with its protocol and token guard. It holds no business rules.
package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// Config is the vagrant-server binary's configuration: the settings every Plinth service
// shares (README), with this service's own port defaults.
type Config struct {
	config.Common
	// JobAckTimeout is how long a runner has to acknowledge an assigned job before it goes
	// back to the queue.
	JobAckTimeout time.Duration `env:"PLINTH_VAGRANT_JOB_ACK_TIMEOUT" flag:"job-ack-timeout" default:"30s" usage:"time a runner has to acknowledge an assigned job before it is requeued"`
	// JobHeartbeatTimeout is how long a running job may go without a heartbeat from its
	// runner before it fails.
	JobHeartbeatTimeout time.Duration `env:"PLINTH_VAGRANT_JOB_HEARTBEAT_TIMEOUT" flag:"job-heartbeat-timeout" default:"60s" usage:"time a running job may go without a runner heartbeat before it fails"`
	// JobReapInterval is how often overdue deadlines are enforced: the most they are late.
	JobReapInterval time.Duration `env:"PLINTH_VAGRANT_JOB_REAP_INTERVAL" flag:"job-reap-interval" default:"1s" usage:"how often ack, heartbeat and expiry deadlines are enforced"`
	// RunnerTimeout is how long a runner stays online when the replica holding its
	// RunnerConfig stream stops vouching for it (that replica died).
	RunnerTimeout time.Duration `env:"PLINTH_VAGRANT_RUNNER_TIMEOUT" flag:"runner-timeout" default:"30s" usage:"time after which a runner whose replica stopped refreshing its last-seen time is marked offline"`
	// AuthAddr is auth's gRPC address, where the Plinth tokens of plinth.vagrant.v1 calls
	// are checked (the Vagrant API's own tokens are this server's).
	AuthAddr string `env:"PLINTH_AUTH_ADDR" flag:"auth-addr" default:"127.0.0.1:7001" usage:"auth's gRPC address (host:port or unix:///path): the Plinth tokens of plinth.vagrant.v1 calls are checked there"`
	// SessionTokenTTL caps the lifetime of the Vagrant tokens issued to Plinth sessions
	// (plinth.vagrant.v1.SessionTokenService); they never outlive their Plinth token anyway.
	SessionTokenTTL time.Duration `env:"PLINTH_VAGRANT_SESSION_TOKEN_TTL" flag:"session-token-ttl" default:"1h" usage:"longest lifetime of a Vagrant token issued to a Plinth session (0: the Plinth token's); never beyond the Plinth token's expiry"`
	// MaxQueuedJobs bounds the unfinished jobs (queued, assigned, running) one owner holds.
	MaxQueuedJobs int `env:"PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER" flag:"max-queued-jobs-per-user" default:"100" usage:"unfinished jobs (queued, assigned or running) one owner (a Plinth user, or the token that made a login token) may hold; QueueJob beyond is refused with ResourceExhausted (0: no limit). kaas queues one job per machine it is creating or changing, all under its one token"`
	// MaxTokens bounds the live tokens (session, login, invite) one owner holds.
	MaxTokens int `env:"PLINTH_VAGRANT_MAX_TOKENS_PER_USER" flag:"max-tokens-per-user" default:"100" usage:"live (unexpired, unrevoked) session, login and invite tokens one owner may hold; a token beyond is refused with ResourceExhausted (0: no limit)"`
	// JobsKept is how many finished jobs (and their output) PruneOldJobs keeps, newest first.
	JobsKept int `env:"PLINTH_VAGRANT_JOBS_KEPT" flag:"jobs-kept" default:"50" usage:"finished jobs PruneOldJobs keeps (the newest)"`
}

// Defaults returns a Config with the vagrant-server's ports; Load fills the rest.
func Defaults() Config {
	var c Config
	c.GRPCAddr, c.AdminAddr = "127.0.0.1:7004", "127.0.0.1:7104"
	return c
}

// Validate checks everything before anything starts.
func (c *Config) Validate() error {
	var errs []error
	positive := func(env, flag string, bad bool) {
		if bad {
			errs = append(errs, fmt.Errorf("%s (-%s): must be positive", env, flag))
		}
	}
	positive("PLINTH_VAGRANT_JOB_ACK_TIMEOUT", "job-ack-timeout", c.JobAckTimeout <= 0)
	positive("PLINTH_VAGRANT_JOB_HEARTBEAT_TIMEOUT", "job-heartbeat-timeout", c.JobHeartbeatTimeout <= 0)
	positive("PLINTH_VAGRANT_JOB_REAP_INTERVAL", "job-reap-interval", c.JobReapInterval <= 0)
	positive("PLINTH_VAGRANT_JOBS_KEPT", "jobs-kept", c.JobsKept <= 0)
	positive("PLINTH_VAGRANT_RUNNER_TIMEOUT", "runner-timeout", c.RunnerTimeout <= 0)
	if c.MaxQueuedJobs < 0 {
		errs = append(errs, errors.New("PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER (-max-queued-jobs-per-user): must not be negative (0: no limit)"))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, errors.New("PLINTH_VAGRANT_MAX_TOKENS_PER_USER (-max-tokens-per-user): must not be negative (0: no limit)"))
	}
	if c.SessionTokenTTL < 0 {
		errs = append(errs, errors.New("PLINTH_VAGRANT_SESSION_TOKEN_TTL (-session-token-ttl): must not be negative"))
	}
	return errors.Join(append([]error{c.Common.Validate(),
		config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL),
		config.Required(config.EnvNATSURL, "nats-url", c.NATSURL),
		config.Required("PLINTH_AUTH_ADDR", "auth-addr", c.AuthAddr)}, errs...)...)
}
