package k8scheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const repoRoot = "../../.."

// Every PLINTH_* variable a Plinth container sets is one its binary reads: a name that appears
// as a string literal in the non-test sources of the binary's service or of libs/platform. A
// misspelt variable would otherwise be ignored silently and the default used.
func TestEnvironmentVariablesExist(t *testing.T) {
	s := decode(t, build(t, kustomizations[0]))
	platform := literals(t, filepath.Join(repoRoot, "libs/platform"))
	checked := 0
	for _, w := range s.Workloads {
		for _, c := range w.Template.Spec.Containers {
			if !strings.HasPrefix(c.Image, "ghcr.io/plinth-dev/") {
				continue // not a Plinth binary (Envoy)
			}
			binary := strings.SplitN(strings.TrimPrefix(c.Image, "ghcr.io/plinth-dev/"), ":", 2)[0]
			dirs, _ := filepath.Glob(filepath.Join(repoRoot, "services", "*", "cmd", binary))
			if len(dirs) != 1 {
				t.Errorf("%s: image %s: no services/*/cmd/%s", w, c.Image, binary)
				continue
			}
			service := literals(t, filepath.Dir(filepath.Dir(dirs[0])))
			for _, e := range c.Env {
				if !strings.HasPrefix(e.Name, "PLINTH_") {
					continue
				}
				checked++
				if !service[e.Name] && !platform[e.Name] {
					t.Errorf("%s: container %q sets %s, which %s does not read", w, c.Name, e.Name, binary)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d variables: the walk found too few", checked)
	}
}

// literals returns every "PLINTH_…" string literal in the non-test Go files under dir.
func literals(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// Odd pieces between double quotes are the insides of string literals (struct tags'
		// quotes come in pairs too).
		pieces := strings.Split(string(data), `"`)
		for i := 1; i < len(pieces); i += 2 {
			if name := pieces[i]; strings.HasPrefix(name, "PLINTH_") && !strings.ContainsAny(name, " \n") {
				out[name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
