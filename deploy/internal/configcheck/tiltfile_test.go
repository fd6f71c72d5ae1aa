package configcheck

import (
	"slices"
	"strconv"
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/launcher"
)

// The Tiltfile's local() lookups: PATH, then where Debian keeps administration commands.
const (
	lookLVM = `PATH="$PATH:/usr/sbin:/sbin" command -v lvm || true`
	lookApt = `PATH="$PATH:/usr/sbin:/sbin" command -v apt-get || true`
)

// Machines the Tiltfile is read on, as its local() calls see them.
var (
	rootWithLVM = map[string]string{"id -u": "0\n", lookLVM: "/usr/sbin/lvm\n"}
	rootWithApt = map[string]string{"id -u": "0\n", lookLVM: "", lookApt: "/usr/bin/apt-get\n"}
	rootNoLVM   = map[string]string{"id -u": "0\n", lookLVM: "", lookApt: ""}
	notRoot     = map[string]string{"id -u": "1000\n", lookLVM: "/usr/sbin/lvm\n"}
)

func runTiltfile(t *testing.T, src []byte, env map[string]string) ([]TiltResource, error) {
	t.Helper()
	return runTiltfileOn(t, src, env, rootWithLVM)
}

func runTiltfileOn(t *testing.T, src []byte, env, machine map[string]string) ([]TiltResource, error) {
	t.Helper()
	rs, err := RunTiltfile(repoRoot(t), src, env, machine)
	if err != nil {
		return nil, err
	}
	offset := 0
	if v, ok := env["PLINTH_PORT_OFFSET"]; ok {
		if offset, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	return rs, CheckTiltResources(repoRoot(t), offset, rs)
}

func resource(t *testing.T, rs []TiltResource, name string) TiltResource {
	t.Helper()
	i := slices.IndexFunc(rs, func(r TiltResource) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("no resource %s in %+v", name, rs)
	}
	return rs[i]
}

// TestTiltfileRunsEveryServiceThroughTheLauncher: one resource per binary the launcher finds,
// each built by its update cmd and served by `plinth-up -run`, after the infra resource.
func TestTiltfileRunsEveryServiceThroughTheLauncher(t *testing.T) {
	rs, err := runTiltfile(t, readRepoFile(t, "Tiltfile"), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	found, err := launcher.Discover(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(found)+1 {
		t.Errorf("%d resources for %d binaries under services/ (+ infra)", len(rs), len(found))
	}
	infra := resource(t, rs, "infra")
	if infra.ServeCmd != ".plinth/bin/plinth-up -infra-only" || infra.Cmd != "go build -o .plinth/bin/plinth-up ./deploy/cmd/plinth-up" {
		t.Errorf("infra cmd %q serve_cmd %q", infra.Cmd, infra.ServeCmd)
	}
	if p := infra.Probe; p == nil || p.Port != launcher.InfraAdminPort {
		t.Errorf("infra readiness probe %+v, want GET 127.0.0.1:%d/readyz", p, launcher.InfraAdminPort)
	}
	auth := resource(t, rs, "auth")
	if auth.ServeCmd != ".plinth/bin/plinth-up -run auth" || auth.Cmd != "go build -o .plinth/bin/auth ./services/auth/cmd/auth" {
		t.Errorf("auth cmd %q serve_cmd %q", auth.Cmd, auth.ServeCmd)
	}
	if p := auth.Probe; p == nil || p.Port != 7101 || p.Path != "/readyz" {
		t.Errorf("auth readiness probe %+v, want GET 127.0.0.1:7101/readyz", p)
	}
	want := map[string]bool{"services/auth": true, "libs": true, "go.work": true}
	for _, d := range auth.Deps {
		delete(want, d)
	}
	if len(want) > 0 {
		t.Errorf("auth deps %v miss %v: changes there would not restart it", auth.Deps, want)
	}
	if runner := resource(t, rs, "vagrant-runner"); !slices.Contains(runner.ResourceDeps, "vagrant-server") {
		t.Errorf("vagrant-runner resource_deps %v: it needs vagrant-server's token first", runner.ResourceDeps)
	}
}

// TestTiltfileLeavesOutLvmdWhereItCannotRun: lvmd-agent runs where the launcher runs it (own
// device classes, or root with lvm2, found or installed by the infra resource's apt-get);
// elsewhere it has no resource and the gateway does not
// wait for it (it waited forever for a resource that could only fail).
func TestTiltfileLeavesOutLvmdWhereItCannotRun(t *testing.T) {
	src := readRepoFile(t, "Tiltfile")
	for _, tc := range []struct {
		name    string
		env     map[string]string
		machine map[string]string
		runs    bool
	}{
		{"root with lvm2", map[string]string{}, rootWithLVM, true},
		{"root without lvm2, apt-get installs it", map[string]string{}, rootWithApt, true},
		{"root without lvm2, -no-install", map[string]string{"PLINTH_NO_INSTALL": "1"}, rootWithApt, false},
		{"root without lvm2 or apt-get", map[string]string{}, rootNoLVM, false},
		{"not root", map[string]string{}, notRoot, false},
		{"not root, own lvmd.yaml", map[string]string{"PLINTH_LVMD_CONFIG": "/etc/topolvm/lvmd.yaml"}, notRoot, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := runTiltfileOn(t, src, tc.env, tc.machine)
			if err != nil {
				t.Fatal(err)
			}
			has := slices.ContainsFunc(rs, func(r TiltResource) bool { return r.Name == "lvmd-agent" })
			waits := slices.Contains(resource(t, rs, "gateway").ResourceDeps, "lvmd-agent")
			if has != tc.runs || waits != tc.runs {
				t.Errorf("lvmd-agent resource %v, gateway waits for it %v; want both %v", has, waits, tc.runs)
			}
			resource(t, rs, "cnpgi-plugin") // the others stay
		})
	}
	// A binary that is not Optional may not be left out, whatever the machine.
	_, err := runTiltfileOn(t, mutate(t, src, "plinth_service('cnpgi-plugin', 7106)\n", ""), map[string]string{}, notRoot)
	wantErr(t, err, "cnpgi-plugin (services/cnpgi-plugin) has no resource")
	// A local() command the check cannot answer fails the run rather than guessing.
	_, err = runTiltfileOn(t, mutate(t, src, "local('id -u', quiet=True)", "local('whoami', quiet=True)"), map[string]string{}, rootWithLVM)
	wantErr(t, err, `local("whoami")`)
}

// TestTiltfileFollowsHomeAndPortOffset: a second suite (the e2e test) moves every path and
// port the way the launcher does.
func TestTiltfileFollowsHomeAndPortOffset(t *testing.T) {
	env := map[string]string{"PLINTH_HOME": "/tmp/plinth-tilt", "PLINTH_PORT_OFFSET": "500"}
	rs, err := runTiltfile(t, readRepoFile(t, "Tiltfile"), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := resource(t, rs, "stats").ServeCmd; got != "/tmp/plinth-tilt/bin/plinth-up -run stats" {
		t.Errorf("stats serve_cmd %q", got)
	}
	if p := resource(t, rs, "stats").Probe; p == nil || p.Port != 7602 {
		t.Errorf("stats probe %+v, want port 7102+500", p)
	}
	if p := resource(t, rs, "infra").Probe; p == nil || p.Port != launcher.InfraAdminPort+500 {
		t.Errorf("infra probe %+v, want port %d", p, launcher.InfraAdminPort+500)
	}
}

// TestTiltfileRejects proves the checks bite: each broken copy must be refused.
func TestTiltfileRejects(t *testing.T) {
	src := readRepoFile(t, "Tiltfile")
	for _, tc := range []struct{ name, old, new, want string }{
		{"service that does not exist", "plinth_service('auth', 7101)", "plinth_service('authz', 7101)",
			"runs authz, which is not under services/*/cmd"},
		{"service left out", "plinth_service('cnpgi-plugin', 7106)\n", "",
			"cnpgi-plugin (services/cnpgi-plugin) has no resource"},
		{"misspelt Tilt parameter", "serve_cmd=[LAUNCHER, '-run', binary],", "serve_cmds=[LAUNCHER, '-run', binary],", "unexpected keyword argument"},
		{"probe on the wrong path", "path='/readyz'", "path='/healthz'", "readiness probe asks"},
		{"probe on the wrong port", "plinth_service('stats', 7102,", "plinth_service('stats', 7103,", "readiness probe asks"},
		{"dependency of the launcher missing", "resource_deps=['auth', 'vagrant-server']", "resource_deps=['auth']", "lack vagrant-server"},
		{"infra not waited for", "resource_deps=['infra'] + resource_deps", "resource_deps=resource_deps", "lack infra"},
		{"no infra", "serve_cmd=[LAUNCHER, '-infra-only'],", "serve_cmd=[LAUNCHER],", "no resource serves plinth-up -infra-only"},
		{"update step builds another binary", "'./services/%s/cmd/%s' % (service, binary)", "'./services/auth/cmd/auth'", "does not build ./services/stats/cmd/stats"},
		{"Tilt function without a stand-in", "plinth_service('auth', 7101)", "docker_build('auth', '.')", "undefined: docker_build"},
		{"non-string argv word", "cmd=['go', 'build',", "cmd=['go', 1,", "is not a string"},
		{"missing dep", "'libs', 'go.work'", "'libz', 'go.work'", "dep libz does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runTiltfile(t, mutate(t, src, tc.old, tc.new), map[string]string{})
			wantErr(t, err, tc.want)
		})
	}
}
