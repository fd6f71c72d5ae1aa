package settings

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

const repoRoot = "../../../.."

// The sets follow each binary's Config: its own settings, the shared parts it embeds, and
// not the parts it leaves out even though it links libs/platform/config, which declares them.
func TestBinariesFollowTheirConfig(t *testing.T) {
	all, err := Binaries(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		binary  string
		accepts []string
		rejects []string
	}{
		{"kaas", []string{"PLINTH_GRPC_ADDR", "PLINTH_DATABASE_URL", "PLINTH_NATS_URL", "PLINTH_LOG_LEVEL", "PLINTH_KAAS_PROVIDER", "PLINTH_KAAS_VAGRANT_ADDR", "PLINTH_KAAS_MAAS_URL", "PLINTH_AUTH_ADDR"},
			[]string{"PLINTH_STATS_CEPH_URL", "PLINTH_VAGRANT_SERVER_ADDR", "PLINTH_HOME"}},
		{"gateway", []string{"PLINTH_GRPC_ADDR", "PLINTH_NATS_URL", "PLINTH_AUTH_ADDR"},
			[]string{"PLINTH_DATABASE_URL", "PLINTH_KAAS_PROVIDER"}},
		{"vagrant-runner", []string{"PLINTH_ADMIN_ADDR", "PLINTH_LOG_FORMAT", "PLINTH_VAGRANT_SERVER_ADDR", "PLINTH_VAGRANT_RUNNER_RESERVED_ID"},
			[]string{"PLINTH_GRPC_ADDR", "PLINTH_DATABASE_URL", "PLINTH_NATS_URL", "PLINTH_VAGRANT_JOBS_KEPT"}},
		{"vagrant-server", []string{"PLINTH_VAGRANT_JOBS_KEPT", "PLINTH_AUTH_ADDR", "PLINTH_DATABASE_URL"},
			[]string{"PLINTH_VAGRANT_RUNNER_RESERVED_ID"}},
		{"cnpgi-plugin", []string{"PLINTH_CNPGI_PLUGIN_NAME", "PLINTH_CNPGI_TLS_ADDR", "PLINTH_DATABASE_URL"}, nil},
		{"lvmd-agent", []string{"PLINTH_LVMD_CONFIG", "PLINTH_LVMD_DEFAULT_S3_ENDPOINT"}, []string{"PLINTH_LVMD_VG"}},
		{"stats", []string{"PLINTH_STATS_CEPH_URL"}, nil},
		{"auth", []string{"PLINTH_AUTH_TRUSTED_PROXIES", "PLINTH_ADMIN_PASSWORD"}, []string{"PLINTH_AUTH_ADDR"}},
	} {
		set, ok := all[c.binary]
		if !ok {
			t.Errorf("no binary %s in %v", c.binary, keys(all))
			continue
		}
		for _, n := range c.accepts {
			if !set[n] {
				t.Errorf("%s: %s missing from %v", c.binary, n, Names(set))
			}
		}
		for _, n := range c.rejects {
			if set[n] {
				t.Errorf("%s: %s listed, but its Config has no such field", c.binary, n)
			}
		}
	}
}

func keys(m map[string]map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// readsEnv matches a Go call reading a PLINTH_* variable by its literal name.
var readsEnv = regexp.MustCompile(`(?:Getenv|LookupEnv|getenv)\("(PLINTH_[A-Z0-9_]+)"\)`)

// Every PLINTH_* variable that code of the repository (tests, tools, the launcher) reads by
// name is a setting of some binary or listed in config.IsShared: otherwise a binary that
// inherits it would warn about a variable that is no mistake.
func TestEveryVariableReadIsASettingOrShared(t *testing.T) {
	all, err := Binaries(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	anyBinary := map[string]bool{}
	for _, set := range all {
		for n := range set {
			anyBinary[n] = true
		}
	}
	found := 0
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range readsEnv.FindAllStringSubmatch(string(src), -1) {
			found++
			if name := m[1]; !anyBinary[name] && !config.IsShared(name) {
				t.Errorf("%s reads %s, which is no binary's setting and not in config.IsShared", p, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 5 {
		t.Errorf("found %d reads: the walk is broken", found)
	}
}
