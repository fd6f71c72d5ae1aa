package restore

import (
	"regexp"
	"strings"
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
// bare `cnpgi-plugin wal-restore %f %p` find the same archive.
func (c Command) For(store, server string) (string, []string) {
	envs := []string{
		"PLINTH_CNPGI_SOCKET=" + c.Socket, "PLINTH_CNPGI_PLUGIN_NAME=" + c.Plugin,
		"PLINTH_CNPGI_OBJECT_STORE=" + store, "PLINTH_CNPGI_SERVER_NAME=" + server,
	}
	if c.Fixed != "" {
		return c.Fixed, envs
	}
	args := []string{
		c.Binary, "wal-restore", "-socket=" + c.Socket, "-plugin-name=" + c.Plugin,
		"-object-store=" + store, "-server-name=" + server, "%f", "%p",
	}
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
