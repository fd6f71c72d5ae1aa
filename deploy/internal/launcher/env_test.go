package launcher

import (
	"slices"
	"strings"
	"testing"
)

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s set twice in %v", k, env)
		}
		m[k] = v
	}
	return m
}

func TestChildEnvSetsConventionsAndOverridesInherited(t *testing.T) {
	base := []string{"PATH=/bin", "PLINTH_GRPC_ADDR=127.0.0.1:1", "PLINTH_DATABASE_URL=postgres://wrong", "PLINTH_PORT_OFFSET=5", "PLINTH_LOG_LEVEL=debug"}
	placed, _, err := Plan([]Binary{{Service: "auth", Name: "auth"}}, "/h", 0, allFree)
	if err != nil {
		t.Fatal(err)
	}
	infra := Infra{DatabaseURL: "postgres://postgres@127.0.0.1:5432/plinth", NATSURL: "nats://127.0.0.1:4222"}
	got := envMap(t, ChildEnv(Config{Home: "/h", Environ: base}, placed[0], nil, infra, false))
	want := map[string]string{
		"PATH":                "/bin",
		"PLINTH_LOG_LEVEL":    "debug",
		"PLINTH_GRPC_ADDR":    "127.0.0.1:7001",
		"PLINTH_ADMIN_ADDR":   "127.0.0.1:7101",
		"PLINTH_DATABASE_URL": infra.DatabaseURL,
		"PLINTH_NATS_URL":     infra.NATSURL,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"PLINTH_PORT_OFFSET", "PLINTH_LOG_FORMAT"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s should not be passed to a child not on a terminal", k)
		}
	}
}

func TestChildEnvAsksForTextLogsOnATerminalUnlessChosen(t *testing.T) {
	p := Placement{Spec: Spec{Binary: "auth"}, GRPC: "127.0.0.1:7001", Admin: "127.0.0.1:7101"}
	if got := envMap(t, ChildEnv(Config{Home: "/h"}, p, nil, Infra{}, true)); got["PLINTH_LOG_FORMAT"] != "text" {
		t.Errorf("PLINTH_LOG_FORMAT = %q on a terminal, want text", got["PLINTH_LOG_FORMAT"])
	}
	got := envMap(t, ChildEnv(Config{Home: "/h", Environ: []string{"PLINTH_LOG_FORMAT=json"}}, p, nil, Infra{}, true))
	if got["PLINTH_LOG_FORMAT"] != "json" {
		t.Errorf("PLINTH_LOG_FORMAT = %q, want the user's json", got["PLINTH_LOG_FORMAT"])
	}
}

func TestChildEnvExtrasFromTheTable(t *testing.T) {
	found := []Binary{
		{Service: "vagrant-server", Name: "vagrant-server"},
		{Service: "vagrant-server", Name: "vagrant-runner"},
		{Service: "cnpgi-plugin", Name: "cnpgi-plugin"},
	}
	placed, _, err := Plan(found, "/h", 10, allFree)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	runner := envMap(t, ChildEnv(Config{Home: "/h"}, byName["vagrant-runner"], byName, Infra{}, false))
	if runner["PLINTH_VAGRANT_SERVER_ADDR"] != "127.0.0.1:7014" {
		t.Errorf("runner PLINTH_VAGRANT_SERVER_ADDR = %q, want 127.0.0.1:7014", runner["PLINTH_VAGRANT_SERVER_ADDR"])
	}
	if _, ok := runner["PLINTH_GRPC_ADDR"]; ok {
		t.Error("the runner serves no gRPC and must not get PLINTH_GRPC_ADDR")
	}
	plugin := ChildEnv(Config{Home: "/h"}, byName["cnpgi-plugin"], byName, Infra{}, false)
	m := envMap(t, plugin)
	if m["PLINTH_GRPC_ADDR"] != "unix:///h/plugins/"+CNPGIPluginName || m["PLINTH_CNPGI_PLUGIN_DIR"] != "/h/plugins" {
		t.Errorf("cnpgi-plugin env = %v", plugin)
	}
	// Extras come in a stable order, so two runs give identical environments.
	if !slices.Equal(plugin, ChildEnv(Config{Home: "/h"}, byName["cnpgi-plugin"], byName, Infra{}, false)) {
		t.Error("ChildEnv is not deterministic")
	}
}

// A user's variable for one binary reaches that binary only: passed to the others, it would
// make each of them warn that it ignores it. Shared variables and unclaimed names (a typo
// of a common setting, which every binary should report) reach all.
func TestChildEnvPassesABinarysVariableToItOnly(t *testing.T) {
	base := []string{"PATH=/bin", "PLINTH_LVMD_CONFIG=/etc/lvmd.yaml", "PLINTH_AUTH_ADDR=127.0.0.1:9",
		"PLINTH_VAGRANT_JOBS_KEPT=5", "PLINTH_VAGRANT_TOKEN_FILE=/t", "PLINTH_LVMD_VG=vg0", "PLINTH_LOG_LEVL=debug",
		"PLINTH_LOG_CALLS=all", "PLINTH_NATS_USER=me"}
	reaches := map[string][]string{
		"PATH":                      {"auth", "lvmd-agent", "kaas", "vagrant-server", "vagrant-runner"},
		"PLINTH_LVMD_CONFIG":        {"lvmd-agent"},
		"PLINTH_AUTH_ADDR":          {"kaas", "vagrant-server"},
		"PLINTH_VAGRANT_JOBS_KEPT":  {"vagrant-server"},
		"PLINTH_VAGRANT_TOKEN_FILE": {"vagrant-runner"},
		"PLINTH_LVMD_VG":            {"auth", "lvmd-agent", "kaas", "vagrant-server", "vagrant-runner"},
		"PLINTH_LOG_LEVL":           {"auth", "lvmd-agent", "kaas", "vagrant-server", "vagrant-runner"},
		"PLINTH_LOG_CALLS":          {"auth", "lvmd-agent", "kaas", "vagrant-server"},
		"PLINTH_NATS_USER":          {"auth", "lvmd-agent", "kaas", "vagrant-server"},
	}
	specs := map[string]Spec{}
	for _, s := range Table() {
		specs[s.Binary] = s
	}
	for _, binary := range []string{"auth", "lvmd-agent", "kaas", "vagrant-server", "vagrant-runner"} {
		p := Placement{Spec: specs[binary], Admin: "127.0.0.1:7100"}
		// The user's value, not the one the spec's extras add after it.
		got := map[string]bool{}
		for _, kv := range ChildEnv(Config{Home: "/h", Environ: base}, p, nil, Infra{}, false) {
			got[kv] = true
		}
		for _, kv := range base {
			name, _, _ := strings.Cut(kv, "=")
			want := reaches[name]
			if ok := got[kv]; ok != slices.Contains(want, binary) {
				t.Errorf("%s reaches %s: %v, want it to reach %v only", name, binary, ok, want)
			}
		}
	}
}
