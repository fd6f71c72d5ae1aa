package launcher

import (
	"maps"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// Infra is the shared infrastructure every service of a run connects to; -infra-only writes
// it to HOME/infra.json for each `-run`.
type Infra struct {
	DatabaseURL string `json:"database_url"`
	NATSURL     string `json:"nats_url"`
	// NATSUsers is the directory of the embedded NATS's password files (NATSUsersDir); empty
	// when NATS is the user's own, which the children then reach as the user configured.
	NATSUsers string `json:"nats_users,omitempty"`
}

// launcherOwned reports the variables the launcher decides per child; values inherited from
// the launcher's own environment would point every child at the same address.
func launcherOwned(key string) bool {
	switch key {
	case envGRPCAddr, envAdminAddr, envDatabaseURL, envNATSURL,
		"PLINTH_PORT_OFFSET":
		return true
	}
	return false
}

// foreign reports whether key, inherited from the launcher's environment, is a setting of
// other binaries and not of spec's: passed on, it would only make the binary warn that it
// ignores it. The binaries' Settings claim names (the longest claim wins, so vagrant-server's
// PLINTH_VAGRANT_JOB_* beats the runner's PLINTH_VAGRANT_); a shared part of the Config is
// foreign to a binary without it. Shared variables (config.IsShared) and names nobody claims
// (common settings, and typos, which the binary should report) are passed on.
func foreign(spec Spec, key string, table []Spec) bool {
	if !strings.HasPrefix(key, config.EnvPrefix) || config.IsShared(key) {
		return false
	}
	switch key {
	case envNATSUser, envNATSPassword:
		if spec.NoNATS {
			return true
		}
	case envLogCalls, envMaxConnsPerClient, envMaxCallsPerClient: // settings of the gRPC server
		if spec.GRPCPort == 0 && spec.Socket == "" {
			return true
		}
	}
	longest, mine := 0, false
	for _, s := range table {
		n := claim(s.Settings, key)
		if n > longest {
			longest, mine = n, false
		}
		if n > 0 && n == longest && s.Binary == spec.Binary {
			mine = true
		}
	}
	return longest > 0 && !mine
}

// claim returns the length of the longest entry of settings that claims key: the name
// itself, or a prefix (ending in "_") of it; 0 when none does.
func claim(settings []string, key string) int {
	n := 0
	for _, c := range settings {
		if (c == key || strings.HasSuffix(c, "_") && strings.HasPrefix(key, c)) && len(c) > n {
			n = len(c)
		}
	}
	return n
}

// ChildEnv builds the environment of one service process, the one both make up and -run give
// it: the launcher's environment (c.Environ) without the variables it owns and those that
// are other binaries' settings (foreign), then the runtime conventions (PLINTH_*), then the
// spec's extras.
// Text logs are asked for when the launcher writes to a terminal, unless the user chose a
// format: children write to a pipe, so they would otherwise pick JSON.
func ChildEnv(c Config, p Placement, placed map[string]Placement, infra Infra, terminal bool) []string {
	env := make([]string, 0, len(c.Environ)+8)
	hasLogFormat := false
	table := Table()
	for _, kv := range c.Environ {
		key, _, _ := strings.Cut(kv, "=")
		if launcherOwned(key) || infra.NATSUsers != "" && (key == envNATSUser || key == envNATSPassword) ||
			foreign(p.Spec, key, table) {
			continue
		}
		if key == envLogFormat {
			hasLogFormat = true
		}
		env = append(env, kv)
	}
	if p.GRPC != "" {
		env = append(env, envGRPCAddr+"="+p.GRPC)
	}
	env = append(env, envAdminAddr+"="+p.Admin)
	if !p.Spec.NoDatabase {
		env = append(env, envDatabaseURL+"="+infra.DatabaseURL)
	}
	if !p.Spec.NoNATS {
		env = append(env, envNATSURL+"="+infra.NATSURL)
	}
	nu := natsUserEnv(p.Spec.Binary, infra.NATSUsers)
	for _, k := range slices.Sorted(maps.Keys(nu)) {
		env = append(env, k+"="+nu[k])
	}
	if terminal && !hasLogFormat {
		env = append(env, "PLINTH_LOG_FORMAT=text")
	}
	if p.Spec.Env != nil {
		extra := p.Spec.Env(c, placed)
		for _, k := range slices.Sorted(maps.Keys(extra)) {
			env = append(env, k+"="+extra[k])
		}
	}
	return env
}
