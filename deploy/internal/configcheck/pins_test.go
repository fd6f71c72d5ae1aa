package configcheck

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/kubeup"
	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
)

// The manifests kubelocal and make kube-demo apply come from the modules tools/crds pins; the
// programs that run them are built from other tools modules: each pair names one version, and
// the images made from those programs are tagged with it (upstream's operator tags drop the v).
func TestToolPinsAgree(t *testing.T) {
	for _, c := range []struct{ module, program string }{
		{kubetest.CNPGModule, "tools/k8s/cnpg/go.mod"},
		{kubelocal.LocalPathModule, "tools/k8s/local-path/go.mod"},
	} {
		if crds, built := requiredVersion(t, "tools/crds/go.mod", c.module), requiredVersion(t, c.program, c.module); crds != built {
			t.Errorf("%s: tools/crds/go.mod pins %s, %s builds %s", c.module, crds, c.program, built)
		}
	}
	if want := "plinth.local/local-path-provisioner:" + requiredVersion(t, "tools/k8s/local-path/go.mod", kubelocal.LocalPathModule); kubelocal.LocalPathImage != want {
		t.Errorf("LocalPathImage %s, want %s", kubelocal.LocalPathImage, want)
	}
	if want := "plinth.local/cloudnative-pg:" + strings.TrimPrefix(requiredVersion(t, "tools/k8s/cnpg/go.mod", kubetest.CNPGModule), "v"); kubeup.OperatorImage != want {
		t.Errorf("kubeup.OperatorImage %s, want %s", kubeup.OperatorImage, want)
	}
}
