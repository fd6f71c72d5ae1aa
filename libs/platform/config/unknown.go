package config

import (
	"log/slog"
	"slices"
	"strings"
)

// EnvPrefix starts the name of every Plinth setting; only variables with it are checked by
// Unknown, since the environment holds many others (PATH, HOME, AWS_*, OTEL_*).
const EnvPrefix = "PLINTH_"

// Shared returns the PLINTH_* variables read by tools of the repository rather than by a
// service binary. A binary inherits these from the shell, make, the launcher or a
// test, so they are not mistakes when its Config lacks them. The list is checked against the
// repository (deploy/internal/configcheck/settings): every name on it is used by some tool,
// and every PLINTH_* variable a tool reads is on it or is a binary's setting. A service's
// own setting belongs in its Config, not here.
func Shared() []string {
	return []string{
		// plinth-up (deploy/internal/launcher) and the Tiltfile, which pass their environment
		// on to every service they start.
		"PLINTH_DATABASE_NAME", "PLINTH_HOME", "PLINTH_KUBE_BUILD_HOME", "PLINTH_LVMD_VG",
		"PLINTH_NO_CEPH", "PLINTH_NO_INSTALL", "PLINTH_PORT_OFFSET", "PLINTH_PRIVATE_POSTGRES",
		// plinth-compose (deploy/cmd/plinth-compose) and the scripts under tools/ and bench/.
		"PLINTH_COMPOSE_LVMD_VG", "PLINTH_COMPOSE_PORT_OFFSET", "PLINTH_DOCKER_ROOT", "PLINTH_GHZ",
		"PLINTH_GRPCURL", "PLINTH_NO_PULL", "PLINTH_TOOLS_CACHE",
		// Tests: strict mode, golden files, the Kubernetes binaries of libs/kubetest, the
		// object-store servers of libs/storage (versitygw, Azurite, fake-gcs-server), and the
		// console journeys of e2e.
		"PLINTH_AZURITE", "PLINTH_CONSOLE_OUTPUT", "PLINTH_FAKE_GCS_SERVER", "PLINTH_KUBE_BIN_DIR",
		"PLINTH_PASSWORD", "PLINTH_TEST_STRICT", "PLINTH_UPDATE_GOLDEN", "PLINTH_USERNAME", "PLINTH_VERSITYGW",
	}
}

// IsShared reports whether name is one of Shared: a PLINTH_* variable read by a tool of the
// repository rather than by a service binary.
func IsShared(name string) bool { return slices.Contains(Shared(), name) }

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
