package launcher

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck/settings"
	"github.com/plinth-dev/plinth/libs/platform/config"
)

// theRepository is the checkout the launcher's tests run in.
const theRepository = "../../.."

// Every PLINTH_* variable the launcher gives a binary is a setting of that binary's Config, as
// configcheck/settings reads it from the env tags; a misspelt or misdirected name (kaas's
// setting given to stats) would otherwise be ignored and the binary run on its default. The
// environment is the fullest the launcher builds: the dev Ceph running, NATS users, a terminal.
func TestLauncherSetsOnlySettingsOfItsBinaries(t *testing.T) {
	accepted, err := settings.Binaries(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	found, err := Discover(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	s3 := devS3{Endpoint: "http://127.0.0.1:7304", AccessKeyFile: "/h/s3/id", SecretKeyFile: "/h/s3/secret",
		Services: map[string]devS3User{"lvmd-agent": {Bucket: "plinth-lvmd", AccessKeyFile: "/h/s3/l/id", SecretKeyFile: "/h/s3/l/secret"}}}
	ceph := devCeph{DashboardURL: "http://127.0.0.1:7303", DashboardUser: "plinth", DashboardPasswordFile: "/h/pw", S3: s3}
	if err := writeHomeJSON(home, DevCephFile, ceph); err != nil {
		t.Fatal(err)
	}
	placed, _, err := Plan(found, home, 0, allFree)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	c := Config{Root: theRepository, Home: home}
	infra := Infra{DatabaseURL: "postgres://127.0.0.1/plinth", NATSURL: "nats://127.0.0.1:4222", NATSUsers: filepath.Join(home, "nats")}
	checked := 0
	for _, p := range placed {
		binary := p.Spec.Binary
		set, ok := accepted[binary]
		if !ok {
			t.Errorf("%s: configcheck/settings does not know it", binary)
			continue
		}
		for _, kv := range ChildEnv(c, p, byName, infra, true) {
			name, _, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(name, config.EnvPrefix) {
				continue
			}
			checked++
			if !set[name] {
				t.Errorf("the launcher sets %s for %s, which is not a setting of its Config (it accepts %v)", name, binary, settings.Names(set))
			}
		}
	}
	// Eight binaries, each with at least its admin address; the extras of the table on top.
	if checked < 50 {
		t.Errorf("checked %d variables: the environment built is too small to mean anything", checked)
	}
}

// Whatever the user's environment holds, a child inherits no PLINTH_* variable that is not
// a setting of its Config or shared (config.IsShared): so under make up no binary warns about
// an unknown variable it did not ask for. And every setting of its own still reaches it.
func TestChildrenInheritOnlyTheirSettings(t *testing.T) {
	accepted, err := settings.Binaries(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	found, err := Discover(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	// The user's environment: every setting of every binary, and the shared variables.
	var base []string
	all := map[string]bool{}
	for _, set := range accepted {
		maps.Copy(all, set)
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		base = append(base, name+"=user")
	}
	base = append(base, "PLINTH_HOME=/h", "PLINTH_LVMD_VG=vg0", "PLINTH_TEST_STRICT=1")
	placed, _, err := Plan(found, t.TempDir(), 0, allFree)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range placed {
		binary := p.Spec.Binary
		set := accepted[binary]
		got := map[string]bool{}
		for _, kv := range ChildEnv(Config{Home: "/h", Environ: base}, p, nil, Infra{}, false) {
			name, _, _ := strings.Cut(kv, "=")
			got[name] = true
		}
		for name := range got {
			if strings.HasPrefix(name, config.EnvPrefix) && !set[name] && !config.IsShared(name) {
				t.Errorf("%s inherits %s, which is not a setting of its Config: it would warn", binary, name)
			}
		}
		for name := range set {
			if !got[name] && !launcherOwned(name) {
				t.Errorf("%s does not inherit its own setting %s", binary, name)
			}
		}
	}
}

// settingName is a string literal that is exactly a variable's name, or its "NAME=" prefix.
var settingName = regexp.MustCompile(`^PLINTH_[A-Z0-9_]+=?$`)

// The launcher spells a service's setting only in settings.go, where the test above checks
// it; elsewhere a PLINTH_* literal is one of the launcher's own variables, which
// config.IsShared lists so that the binaries inheriting them do not warn. Every constant of
// settings.go is a setting of some binary (those the launcher only reads included), or a
// prefix ("_" last) of one.
func TestNoSettingSpelledOutside(t *testing.T) {
	accepted, err := settings.Binaries(theRepository)
	if err != nil {
		t.Fatal(err)
	}
	anyBinary := map[string]bool{}
	for _, set := range accepted {
		for n := range set {
			anyBinary[n] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	constants := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !settingName.MatchString(s) {
				return true
			}
			name := strings.TrimSuffix(s, "=")
			switch {
			case file == "settings.go" && strings.HasSuffix(name, "_"):
				constants++
				if !slices.ContainsFunc(slices.Collect(maps.Keys(anyBinary)), func(n string) bool { return strings.HasPrefix(n, name) }) {
					t.Errorf("settings.go: no binary has a setting starting with %s", name)
				}
			case file == "settings.go":
				constants++
				if !anyBinary[name] {
					t.Errorf("settings.go: %s is a setting of no binary", name)
				}
			case !config.IsShared(name):
				t.Errorf("%s spells %q: name it in settings.go (a service setting) or list it in config.IsShared (a launcher variable)", file, s)
			}
			return true
		})
	}
	if constants < 20 {
		t.Errorf("found %d names in settings.go: the walk is broken", constants)
	}
}
