// Package app wires the vagrant-server: config, store, NATS, outbox relay and the gRPC
// server with its protocol and token guard. It holds no business rules.
package app

import (
	"errors"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// Config is the vagrant-server binary's configuration: the settings every Plinth service
// shares (README), with this service's own port defaults.
type Config struct {
	config.Common
}

// Defaults returns a Config with the vagrant-server's ports; Load fills the rest.
func Defaults() Config {
	return Config{Common: config.Common{GRPCAddr: "127.0.0.1:7004", AdminAddr: "127.0.0.1:7104"}}
}

// Validate checks everything before anything starts.
func (c *Config) Validate() error {
	return errors.Join(c.Common.Validate(),
		config.Required(config.EnvDatabaseURL, "database-url", c.DatabaseURL),
		config.Required(config.EnvNATSURL, "nats-url", c.NATSURL))
}
