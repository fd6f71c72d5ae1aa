package plugin

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// Endpoint is where CloudNativePG and the plugin's own commands reach the plugin: its name
// and the directory of its unix socket, <PluginDir>/<PluginName>. The settings are declared
// here once: the server's Config and the wal-archive, wal-restore and health commands' embed
// Endpoint, and whatever points a process at a plugin (the launcher, the operator's instance
// sidecar, restore_command) fills an Endpoint and turns it into environment or flags with
// config.Environ and config.Args instead of spelling the names again.
type Endpoint struct {
	// PluginName is reported by GetPluginMetadata, listed by clusters in spec.plugins, and
	// names the socket; the commands check that the plugin they reach reports it.
	PluginName string `env:"PLINTH_CNPGI_PLUGIN_NAME" flag:"plugin-name" usage:"plugin name in domain notation: clusters list it in spec.plugins, the socket is named after it and the commands check the plugin reports it (default cnpgi.plinth.dev)"`
	// PluginDir is CloudNativePG's PLUGIN_SOCKET_DIR.
	PluginDir string `env:"PLINTH_CNPGI_PLUGIN_DIR" flag:"plugin-dir" default:".plinth/plugins" usage:"plugin socket directory (CloudNativePG's PLUGIN_SOCKET_DIR); the socket is <dir>/<plugin name>"`
}

// Socket is the path of the plugin's unix socket.
func (e Endpoint) Socket() string { return filepath.Join(e.PluginDir, e.PluginName) }

// nameRE is CNPG-I's rule for GetPluginMetadataResponse.name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// ValidateName checks PluginName against CNPG-I's rule for plugin names.
func (e Endpoint) ValidateName() error {
	if !nameRE.MatchString(e.PluginName) {
		return fmt.Errorf("PLINTH_CNPGI_PLUGIN_NAME (-plugin-name): %q must be at most 63 characters of letters, digits, '.' and '-', starting and ending alphanumeric", e.PluginName)
	}
	return nil
}
