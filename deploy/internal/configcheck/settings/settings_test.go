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

// reads match a PLINTH_* variable read by its literal name, by kind of file: a Go call, the
// Tiltfile's os.getenv, a shell or make expansion, a compose interpolation, a Node script's
// process.env. NATS's own configuration files are left out: nats-server reads its
// PLINTH_NATS_PASSWORD_* there, in its own container, where no binary inherits them.
var reads = []struct {
	match func(path string) bool
	re    *regexp.Regexp
}{
	{func(p string) bool { return strings.HasSuffix(p, ".go") }, regexp.MustCompile(`(?:Getenv|LookupEnv|getenv)\("(PLINTH_[A-Z0-9_]+)"\)`)},
	{func(p string) bool { return filepath.Base(p) == "Tiltfile" }, regexp.MustCompile(`os\.getenv\(\s*['"](PLINTH_[A-Z0-9_]+)`)},
	{isScript, regexp.MustCompile(`\$\{?(PLINTH_[A-Z0-9_]+)|\$\((PLINTH_[A-Z0-9_]+)\)`)},
	{func(p string) bool { return strings.HasPrefix(filepath.Base(p), "docker-compose") }, regexp.MustCompile(`\$\{(PLINTH_[A-Z0-9_]+)`)},
	{func(p string) bool { return strings.HasSuffix(p, ".mjs") || strings.HasSuffix(p, ".js") }, regexp.MustCompile(`process\.env\.(PLINTH_[A-Z0-9_]+)`)},
}

// isScript is a shell script or a makefile (the .ci scripts have no extension).
func isScript(p string) bool {
	base := filepath.Base(p)
	return strings.HasSuffix(base, ".sh") || base == "Makefile" || strings.HasSuffix(base, ".mk") ||
		filepath.Base(filepath.Dir(p)) == ".ci"
}

// plinthName is a PLINTH_* name as a whole word.
var plinthName = regexp.MustCompile(`\bPLINTH_[A-Z0-9_]+\b`)

// sharedDeclaration is the file that lists config.Shared: its own mention of a name proves
// no use.
var sharedDeclaration = filepath.Join("libs", "platform", "config", "unknown.go")

// config.Shared is exactly what tools read. Every PLINTH_* variable that code of the
// repository (tests, tools, scripts, the launcher, the Tiltfile, compose) reads by name is a
// setting of some binary or listed in config.Shared: otherwise a binary that inherits it
// would warn about a variable that is no mistake. And every name listed there is used by
// something beside the list (read, or set for a tool, as the launcher's build marker is): a
// name no tool uses any more would hide a binary's misspelt setting.
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
	used := map[string]bool{} // names mentioned outside the list and the documentation
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// The configuration checks spell misspelt names on purpose, in their negative cases.
		if d.IsDir() && rel == filepath.Join("deploy", "internal", "configcheck") {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(p, ".md") || rel == sharedDeclaration {
			return nil
		}
		var kinds []*regexp.Regexp
		for _, r := range reads {
			if r.match(p) {
				kinds = append(kinds, r.re)
			}
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
			return err // generated or binary: no tool's variable
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, n := range plinthName.FindAllString(string(src), -1) {
			used[n] = true
		}
		for _, re := range kinds {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				name := strings.Join(m[1:], "") // the one group that matched
				found++
				if !anyBinary[name] && !config.IsShared(name) {
					t.Errorf("%s reads %s, which is no binary's setting and not in config.Shared", rel, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 30 {
		t.Errorf("found %d reads: the walk is broken", found)
	}
	for _, name := range config.Shared() {
		if anyBinary[name] {
			t.Errorf("config.Shared lists %s, a binary's setting: remove it from the list", name)
		}
		if !used[name] {
			t.Errorf("config.Shared lists %s, which nothing in the repository uses any more: remove it", name)
		}
	}
}
