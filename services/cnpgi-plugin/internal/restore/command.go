package restore

import (
	"regexp"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cli"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Command is how the restored PostgreSQL fetches WAL: the plugin's own `wal-restore`, which
// calls it back over its socket. A fixed restore command (CloudNativePG's
// `/controller/manager wal-restore ...`) replaces it when set.
type Command struct {
	// Binary is the plugin executable; Socket its unix socket; Plugin its name.
	Binary, Socket, Plugin string
	// Fixed, when set, is used verbatim as restore_command.
	Fixed string
}

// For returns restore_command for WAL of server in store, and the environment that lets a
// bare `cnpgi-plugin wal-restore %f %p` find the same archive. Both are the wal-restore
// command's own Config (cli.Config) written out, so its settings are named only there.
func (c Command) For(store, server string) (string, []string) {
	walRestore := cli.Config{Socket: c.Socket, Endpoint: plugin.Endpoint{PluginName: c.Plugin}, ObjectStore: store, ServerName: server}
	envs := config.Environ(&walRestore)
	if c.Fixed != "" {
		return c.Fixed, envs
	}
	args := append(append([]string{c.Binary, "wal-restore"}, config.Args(&walRestore)...), "%f", "%p")
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " "), envs
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:%,+@-]+$`)

// shellQuote quotes an argument for /bin/sh, which runs restore_command.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
