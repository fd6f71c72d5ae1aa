package lifecycle

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

const plugin = "cnpgi.plinth.dev"

func injector(t *testing.T, s Sidecar) *Injector {
	t.Helper()
	s.PluginName = plugin
	if s.Image == "" {
		s.Image = "ghcr.io/plinth-dev/cnpgi-plugin:v1"
	}
	in, err := NewInjector(s)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	usesPlugin       = `{"metadata":{"name":"pg","namespace":"default"},"spec":{"imagePullPolicy":"Always","plugins":[{"name":"` + plugin + `","isWALArchiver":true}]}}`
	disabled         = `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + plugin + `","enabled":false}]}}`
	withoutPlugin    = `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"other.io"}]}}`
	recoversFrom     = `{"metadata":{"name":"pg"},"spec":{"bootstrap":{"recovery":{"source":"origin"}},"externalClusters":[{"name":"origin","plugin":{"name":"` + plugin + `"}}]}}`
	recoveredAlready = `{"metadata":{"name":"pg"},"spec":{"bootstrap":{"recovery":{"source":"origin"}},"externalClusters":[{"name":"origin","plugin":{"name":"` + plugin + `"}}]},"status":{"currentPrimary":"pg-1"}}`
)

// hook runs the hook and applies its patch as the operator does (evanphx/json-patch v5).
// It returns the patched object, or nil for an empty patch.
func hook(t *testing.T, in *Injector, op Operation, clusterDef string, object []byte) map[string]any {
	t.Helper()
	p, err := in.Hook(op, []byte(clusterDef), object)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return nil
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatalf("not an RFC 6902 patch: %v", err)
	}
	out, err := patch.Apply(object)
	if err != nil {
		t.Fatalf("apply %s: %v", raw, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func at(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	return cur
}

func named(list any, name string) []map[string]any {
	var out []map[string]any
	for _, x := range list.([]any) {
		if m := x.(map[string]any); m["name"] == name {
			out = append(out, m)
		}
	}
	return out
}

func mountPaths(c map[string]any) []string {
	var out []string
	for _, m := range c["volumeMounts"].([]any) {
		out = append(out, m.(map[string]any)["mountPath"].(string))
	}
	return out
}

func TestPodGetsANativeSidecar(t *testing.T) {
	in := injector(t, Sidecar{})
	pod := testdata(t, "pod.json")
	for _, op := range []Operation{OperationCreate, OperationEvaluate} {
		got := hook(t, in, op, usesPlugin, pod)
		if got == nil {
			t.Fatal("no patch for a cluster that uses the plugin")
		}
		if got["apiVersion"] != "v1" || got["kind"] != "Pod" || at(got, "metadata", "name") != "pg-1" {
			t.Fatalf("identity of the object changed: %v %v", got["apiVersion"], got["kind"])
		}
		inits := at(got, "spec", "initContainers").([]any)
		if len(inits) != 2 || inits[0].(map[string]any)["name"] != "bootstrap-controller" {
			t.Fatalf("init containers %v: the sidecar goes after CloudNativePG's own", inits)
		}
		sc := inits[1].(map[string]any)
		if sc["name"] != SidecarName(plugin) || sc["image"] != "ghcr.io/plinth-dev/cnpgi-plugin:v1" || sc["restartPolicy"] != "Always" ||
			sc["imagePullPolicy"] != "Always" || !slices.Equal(toStrings(sc["args"]), []string{"serve"}) {
			t.Fatalf("sidecar %v", sc)
		}
		probe, _ := sc["startupProbe"].(map[string]any)
		if cmd := toStrings(at(probe, "exec", "command")); !slices.Equal(cmd, []string{ImageBinary, "health", "-socket=/plugins/" + plugin}) {
			t.Fatalf("startup probe %v", probe)
		}
		sec := sc["securityContext"].(map[string]any)
		if sec["readOnlyRootFilesystem"] != true || sec["runAsNonRoot"] != true || sec["allowPrivilegeEscalation"] != false {
			t.Fatalf("security context %v", sec)
		}
		want := []string{"/var/lib/postgresql/data", "/controller", "/run", "/dev/shm", "/etc/app-secret", "/plugins"}
		if got := mountPaths(sc); !slices.Equal(got, want) {
			t.Fatalf("sidecar mounts %v, want the main container's and /plugins %v", got, want)
		}
		env := map[string]string{}
		for _, e := range sc["env"].([]any) {
			env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"].(string)
		}
		if env["PLINTH_CNPGI_PLUGIN_DIR"] != "/plugins" || env["PLINTH_CNPGI_PLUGIN_NAME"] != plugin ||
			!strings.HasPrefix(env["PLINTH_CNPGI_SPOOL_DIR"], "/controller/") {
			t.Fatalf("env %v", env)
		}
		main := named(at(got, "spec", "containers"), "postgres")[0]
		if !slices.Contains(mountPaths(main), "/plugins") {
			t.Fatal("postgres does not mount /plugins: the instance manager would not find the socket")
		}
		if v := named(at(got, "spec", "volumes"), PluginsVolume); len(v) != 1 || v[0]["emptyDir"] == nil {
			t.Fatalf("plugins volume %v", v)
		}
		// Idempotent: the patched Pod needs nothing more.
		again, _ := json.Marshal(got)
		if p := hook(t, in, op, usesPlugin, again); p != nil {
			t.Fatal("a second hook on the patched Pod changed it again")
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestAnOutdatedSidecarIsReplacedNotDuplicated: a new image replaces the old sidecar in place.
func TestAnOutdatedSidecarIsReplacedNotDuplicated(t *testing.T) {
	first := hook(t, injector(t, Sidecar{Image: "img:v1"}), OperationCreate, usesPlugin, testdata(t, "pod.json"))
	raw, _ := json.Marshal(first)
	second := hook(t, injector(t, Sidecar{Image: "img:v2"}), OperationEvaluate, usesPlugin, raw)
	if second == nil {
		t.Fatal("a changed image produced no patch")
	}
	sidecars := named(at(second, "spec", "initContainers"), SidecarName(plugin))
	if len(sidecars) != 1 || sidecars[0]["image"] != "img:v2" {
		t.Fatalf("sidecars %v", sidecars)
	}
	if n := len(named(at(second, "spec", "volumes"), PluginsVolume)); n != 1 {
		t.Fatalf("%d plugins volumes", n)
	}
}

func TestConfigMapAndSecretReachTheSidecar(t *testing.T) {
	got := hook(t, injector(t, Sidecar{ConfigMap: "cnpgi-config", EnvSecret: "cnpgi-env"}), OperationCreate, usesPlugin, testdata(t, "pod.json"))
	sc := named(at(got, "spec", "initContainers"), SidecarName(plugin))[0]
	if ef := sc["envFrom"].([]any); len(ef) != 1 || at(ef[0].(map[string]any), "secretRef", "name") != "cnpgi-env" {
		t.Fatalf("envFrom %v", sc["envFrom"])
	}
	if !slices.Contains(mountPaths(sc), ConfigMountPath) {
		t.Fatalf("the configuration is not mounted: %v", mountPaths(sc))
	}
	if v := named(at(got, "spec", "volumes"), ConfigVolume(plugin)); len(v) != 1 || at(v[0], "configMap", "name") != "cnpgi-config" {
		t.Fatalf("config volume %v", v)
	}
	if strings.Contains(string(mustJSON(t, sc)), "PLINTH_DATABASE_URL") {
		t.Fatal("secrets must come from the Secret, not the patch")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWhoGetsTheSidecar(t *testing.T) {
	in := injector(t, Sidecar{})
	pod, job := testdata(t, "pod.json"), testdata(t, "job.json")
	initdb := []byte(strings.ReplaceAll(string(job), "full-recovery", "initdb"))
	cases := []struct {
		name, cluster string
		op            Operation
		object        []byte
		want          bool
	}{
		{"pod, plugin disabled", disabled, OperationCreate, pod, false},
		{"pod, other plugins only", withoutPlugin, OperationCreate, pod, false},
		{"pod, patch operation", usesPlugin, OperationOther, pod, false},
		{"pod of a cluster recovering from the plugin", recoversFrom, OperationCreate, pod, true},
		{"pod of a cluster done recovering", recoveredAlready, OperationCreate, pod, false},
		{"recovery job", recoversFrom, OperationCreate, job, true},
		{"recovery job of a cluster archiving elsewhere", usesPlugin, OperationCreate, job, false},
		{"initdb job", recoversFrom, OperationCreate, initdb, false},
		{"another kind", usesPlugin, OperationCreate, []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{}}`), false},
	}
	for _, c := range cases {
		if got := hook(t, in, c.op, c.cluster, c.object) != nil; got != c.want {
			t.Errorf("%s: injected=%v, want %v", c.name, got, c.want)
		}
	}
	got := hook(t, in, OperationCreate, recoversFrom, job)
	if got["kind"] != "Job" || got["apiVersion"] != "batch/v1" {
		t.Fatalf("job identity %v %v", got["apiVersion"], got["kind"])
	}
	spec := at(got, "spec", "template", "spec").(map[string]any)
	sc := named(spec["initContainers"], SidecarName(plugin))
	if len(sc) != 1 || !slices.Equal(mountPaths(sc[0]), []string{"/var/lib/postgresql/data", "/controller", "/run", "/plugins"}) {
		t.Fatalf("job sidecar %v", sc)
	}
	if !slices.Contains(mountPaths(named(spec["containers"], "full-recovery")[0]), "/plugins") {
		t.Fatal("the recovery container does not mount /plugins")
	}
	// PostgreSQL recovers in the job's own container, where only CloudNativePG's instance
	// manager is: restore_command must go through it, not through the sidecar's binary.
	var restore string
	for _, e := range sc[0]["env"].([]any) {
		if e := e.(map[string]any); e["name"] == "PLINTH_CNPGI_RESTORE_COMMAND" {
			restore, _ = e["value"].(string)
		}
	}
	if !strings.HasPrefix(restore, "/controller/manager wal-restore ") || !strings.HasSuffix(restore, " %f %p") {
		t.Fatalf("the sidecar's restore_command %q is not the instance manager's wal-restore", restore)
	}
}

func TestMinimalPodGetsTheLists(t *testing.T) {
	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"postgres","image":"pg"}]}}`)
	got := hook(t, injector(t, Sidecar{}), OperationCreate, usesPlugin, pod)
	if len(named(at(got, "spec", "initContainers"), SidecarName(plugin))) != 1 || len(named(at(got, "spec", "volumes"), PluginsVolume)) != 1 {
		t.Fatalf("patched %v", got)
	}
	if sc := named(at(got, "spec", "initContainers"), SidecarName(plugin))[0]; !slices.Equal(mountPaths(sc), []string{"/plugins"}) {
		t.Fatalf("mounts %v", mountPaths(sc))
	}
}

func TestBadObjects(t *testing.T) {
	in := injector(t, Sidecar{})
	for name, obj := range map[string]string{
		"not JSON":               `{`,
		"no postgres":            `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"x"}]}}`,
		"pod without spec":       `{"apiVersion":"v1","kind":"Pod"}`,
		"job without spec":       `{"apiVersion":"batch/v1","kind":"Job"}`,
		"job without containers": `{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"metadata":{"labels":{"cnpg.io/jobRole":"full-recovery"}},"spec":{}}}}`,
	} {
		clusterDef := usesPlugin
		if strings.Contains(obj, "Job") {
			clusterDef = recoversFrom
		}
		_, err := in.Hook(OperationCreate, []byte(clusterDef), []byte(obj))
		var cerr *input.Error
		if !errors.As(err, &cerr) || cerr.Field != "object_definition" {
			t.Errorf("%s: %v, want an object_definition error", name, err)
		}
	}
	if _, err := in.Hook(OperationCreate, []byte(`{}`), testdata(t, "pod.json")); err == nil {
		t.Error("a Cluster without a name was accepted")
	}
	if _, err := NewInjector(Sidecar{PluginName: plugin}); err == nil {
		t.Error("an injector without an image")
	}
}

// TestTwoPluginsInOnePod: a second Deployment of this binary under another plugin name, both
// entries of one Cluster, injects a second sidecar beside the first, with its own container,
// configuration volume and directories; both hooks run again change nothing.
func TestTwoPluginsInOnePod(t *testing.T) {
	const second = "cnpgi-b.plinth.dev"
	both := `{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + plugin + `","isWALArchiver":true},{"name":"` + second + `","isWALArchiver":false}]}}`
	a := injector(t, Sidecar{ConfigMap: "config-a"})
	b, err := NewInjector(Sidecar{Image: "ghcr.io/plinth-dev/cnpgi-plugin:v1", PluginName: second, ConfigMap: "config-b"})
	if err != nil {
		t.Fatal(err)
	}
	pod := hook(t, a, OperationCreate, both, testdata(t, "pod.json"))
	pod = hook(t, b, OperationCreate, both, mustJSON(t, pod))
	if SidecarName(second) == SidecarName(plugin) || ConfigVolume(second) == ConfigVolume(plugin) {
		t.Fatalf("the two plugins share names: %s, %s", SidecarName(second), ConfigVolume(second))
	}
	env := func(sc map[string]any) map[string]string {
		m := map[string]string{}
		for _, e := range sc["env"].([]any) {
			e := e.(map[string]any)
			m[e["name"].(string)], _ = e["value"].(string)
		}
		return m
	}
	seen := map[string]string{}
	for p, cm := range map[string]string{plugin: "config-a", second: "config-b"} {
		sc := named(at(pod, "spec", "initContainers"), SidecarName(p))
		if len(sc) != 1 {
			t.Fatalf("%s: %d sidecars named %s", p, len(sc), SidecarName(p))
		}
		e := env(sc[0])
		if e["PLINTH_CNPGI_PLUGIN_NAME"] != p {
			t.Errorf("%s's sidecar serves %q", p, e["PLINTH_CNPGI_PLUGIN_NAME"])
		}
		for _, k := range []string{"PLINTH_CNPGI_SPOOL_DIR", "PLINTH_CNPGI_DEFAULT_STORE_DIR"} {
			if other, dup := seen[e[k]]; dup {
				t.Errorf("%s: %s %s is %s's too", p, k, e[k], other)
			}
			seen[e[k]] = p
		}
		if v := named(at(pod, "spec", "volumes"), ConfigVolume(p)); len(v) != 1 || at(v[0], "configMap", "name") != cm {
			t.Errorf("%s's config volume %v", p, v)
		}
		if !slices.Contains(mountPaths(sc[0]), ConfigMountPath) {
			t.Errorf("%s's sidecar does not mount its configuration", p)
		}
	}
	if n := len(named(at(pod, "spec", "volumes"), PluginsVolume)); n != 1 {
		t.Fatalf("%d plugins volumes", n)
	}
	raw := mustJSON(t, pod)
	for _, in := range []*Injector{a, b} {
		if again := hook(t, in, OperationEvaluate, both, raw); again != nil {
			t.Fatalf("evaluating the injected pod patched it again: %v", again)
		}
	}
}

func TestSidecarNames(t *testing.T) {
	long := strings.Repeat("a", 30) + "." + strings.Repeat("b", 32)
	longer := strings.Repeat("a", 30) + "." + strings.Repeat("c", 32)
	for p, want := range map[string]string{
		plugin:               "plinth-cnpgi",
		"cnpgi-b.plinth.dev": "plinth-cnpgi-cnpgi-b-plinth-dev",
		"Backup.Example.COM": "plinth-cnpgi-backup-example-com",
	} {
		if got := SidecarName(p); got != want {
			t.Errorf("SidecarName(%q) = %q, want %q", p, got, want)
		}
	}
	a, c := ConfigVolume(long), ConfigVolume(longer)
	if len(a) > 63 || len(c) > 63 || a == c || !strings.HasPrefix(a, "plinth-cnpgi-aaa") {
		t.Fatalf("long names: %q, %q", a, c)
	}
}
