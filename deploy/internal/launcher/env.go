package launcher

import (
	"maps"
	"slices"
	"strings"
)

// Infra is the shared infrastructure every service of a run connects to; -infra-only writes
// it to HOME/infra.json for each `-run`.
type Infra struct {
	DatabaseURL string `json:"database_url"`
	NATSURL     string `json:"nats_url"`
}

// launcherOwned reports the variables the launcher decides per child; values inherited from
// the launcher's own environment would point every child at the same address.
func launcherOwned(key string) bool {
	switch key {
	case "PLINTH_GRPC_ADDR", "PLINTH_ADMIN_ADDR", "PLINTH_DATABASE_URL", "PLINTH_NATS_URL",
		"PLINTH_PORT_OFFSET":
		return true
	}
	return false
}

// ChildEnv builds the environment of one service process: the launcher's environment without
// the variables it owns, then the runtime conventions (PLINTH_*), then the spec's extras.
// Text logs are asked for when the launcher writes to a terminal, unless the user chose a
// format: children write to a pipe, so they would otherwise pick JSON.
func ChildEnv(base []string, p Placement, placed map[string]Placement, home string, infra Infra, terminal bool) []string {
	env := make([]string, 0, len(base)+8)
	hasLogFormat := false
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		if launcherOwned(key) {
			continue
		}
		if key == "PLINTH_LOG_FORMAT" {
			hasLogFormat = true
		}
		env = append(env, kv)
	}
	if p.GRPC != "" {
		env = append(env, "PLINTH_GRPC_ADDR="+p.GRPC)
	}
	env = append(env,
		"PLINTH_ADMIN_ADDR="+p.Admin,
		"PLINTH_DATABASE_URL="+infra.DatabaseURL,
		"PLINTH_NATS_URL="+infra.NATSURL,
	)
	if terminal && !hasLogFormat {
		env = append(env, "PLINTH_LOG_FORMAT=text")
	}
	if p.Spec.Env != nil {
		extra := p.Spec.Env(home, placed)
		for _, k := range slices.Sorted(maps.Keys(extra)) {
			env = append(env, k+"="+extra[k])
		}
	}
	return env
}
