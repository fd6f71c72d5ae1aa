package config

import (
	"log/slog"
	"slices"
	"strings"
)

// EnvPrefix starts the name of every Plinth setting; only variables with it are checked by
// Unknown, since the environment holds many others (PATH, HOME, AWS_*, OTEL_*).
const EnvPrefix = "PLINTH_"

// IsShared reports whether name is a PLINTH_* variable read by a tool of the repository rather
// than by a service binary. A binary inherits these from the shell, make, the launcher or a
// test, so they are not mistakes when its Config lacks them. Keep this list to names that some
// code really reads; a service's own setting belongs in its Config, not here.
func IsShared(name string) bool {
	switch name {
	case
		// plinth-up (deploy/internal/launcher) and the Tiltfile, which pass their environment
		// on to every service they start.
		"PLINTH_HOME", "PLINTH_PORT_OFFSET", "PLINTH_DATABASE_NAME", "PLINTH_PRIVATE_POSTGRES",
		"PLINTH_NO_INSTALL", "PLINTH_NO_CEPH", "PLINTH_LVMD_VG", "PLINTH_KUBE_BUILD_HOME",
		// plinth-compose (deploy/cmd/plinth-compose).
		"PLINTH_COMPOSE_PORT_OFFSET", "PLINTH_COMPOSE_LVMD_VG", "PLINTH_NO_PULL",
		// Tests: strict mode, golden files, the Kubernetes binaries of libs/kubetest, the
		// versitygw of libs/storage/s3test, and the console journeys of e2e.
		"PLINTH_TEST_STRICT", "PLINTH_UPDATE_GOLDEN", "PLINTH_KUBE_BIN_DIR", "PLINTH_VERSITYGW",
		"PLINTH_CONSOLE_OUTPUT", "PLINTH_USERNAME", "PLINTH_PASSWORD",
		// Scripts under tools/ and bench/.
		"PLINTH_DOCKER_ROOT", "PLINTH_TOOLS_CACHE", "PLINTH_GHZ", "PLINTH_GRPCURL":
		return true
	}
	return false
}

// Unknown returns, sorted, the PLINTH_* variables set in environ ("KEY=value" form) that are
// neither a setting of cfg (an env tag of its fields) nor IsShared: most likely a misspelt
// setting, whose default the binary silently runs with. Empty variables count, as a typo is
// a typo whatever its value. A cfg Load cannot read yields nil (Load reports that).
func Unknown(cfg any, environ []string) []string {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return nil
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		if f.env != "" {
			known[f.env] = true
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !known[name] && !IsShared(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// WarnUnknown logs one warning listing Unknown(cfg, environ), and nothing when there are none.
// It names the variables only: a value may be a secret meant for another setting.
func WarnUnknown(log *slog.Logger, cfg any, environ []string) {
	if names := Unknown(cfg, environ); len(names) > 0 {
		log.Warn("environment variables that are not settings of this binary are ignored (misspelt?)",
			"variables", names)
	}
}
