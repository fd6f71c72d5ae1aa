// Package plugin holds the cnpgi-plugin's contract with the outside that other modules
// (the launcher) need without linking the plugin: its default name.
package plugin

// DefaultName is the plugin name reported by GetPluginMetadata unless configured
// otherwise; clusters list it in spec.plugins, and CloudNativePG dials the socket
// <plugin socket dir>/<name>.
const DefaultName = "cnpgi.plinth.dev"

// LicenseURL is where the project's license (Apache-2.0) is published.
const LicenseURL = "https://github.com/plinth-dev/plinth/blob/main/LICENSE"
