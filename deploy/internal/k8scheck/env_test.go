package k8scheck

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/configcheck/settings"
)

const repoRoot = "../../.."

// Every PLINTH_* variable a Plinth container sets is a setting of its binary: an env tag of
// the binary's Config, as configcheck/settings reads it (the launcher's and compose's checks
// ask it too). A misspelt variable would otherwise be ignored silently and the default used.
func TestEnvironmentVariablesExist(t *testing.T) {
	s := decode(t, build(t, kustomizations[0]))
	accepted, err := settings.Binaries(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, w := range s.Workloads {
		for _, c := range w.Template.Spec.Containers {
			if !strings.HasPrefix(c.Image, "ghcr.io/plinth-dev/") {
				continue // not a Plinth binary (Envoy)
			}
			binary := strings.SplitN(strings.TrimPrefix(c.Image, "ghcr.io/plinth-dev/"), ":", 2)[0]
			set, ok := accepted[binary]
			if !ok {
				t.Errorf("%s: image %s: no services/*/cmd/%s", w, c.Image, binary)
				continue
			}
			for _, e := range c.Env {
				if !strings.HasPrefix(e.Name, "PLINTH_") {
					continue
				}
				checked++
				if !set[e.Name] {
					t.Errorf("%s: container %q sets %s, which is not a setting of %s", w, c.Name, e.Name, binary)
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d variables: the walk found too few", checked)
	}
}
