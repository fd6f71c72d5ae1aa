package configcheck

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/deploy/internal/kubeup"
	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
)

// The manifests kubelocal, make kube-demo and e2e apply come from the modules tools/crds pins;
// the programs that run them are built from other tools modules: each pair names one version,
// and the images made from those programs are tagged with it (upstream's operator tags drop
// the v).
func TestToolPinsAgree(t *testing.T) {
	for _, c := range []struct{ module, program string }{
		{kubetest.CNPGModule, "tools/k8s/cnpg/go.mod"},
		{kubelocal.LocalPathModule, "tools/k8s/local-path/go.mod"},
		// TopoLVM v0.11's node plugin and its CRD; v0.41's (tools/k8s/topolvm041) has its
		// CRD from its own module, since tools/crds can pin one TopoLVM only.
		{kubetest.TopoLVMModule, "tools/k8s/topolvm/go.mod"},
	} {
		if crds, built := requiredVersion(t, "tools/crds/go.mod", c.module), requiredVersion(t, c.program, c.module); crds != built {
			t.Errorf("%s: tools/crds/go.mod pins %s, %s builds %s", c.module, crds, c.program, built)
		}
	}
	if want := "plinth.local/local-path-provisioner:" + requiredVersion(t, "tools/k8s/local-path/go.mod", kubelocal.LocalPathModule); kubelocal.LocalPathImage != want {
		t.Errorf("LocalPathImage %s, want %s", kubelocal.LocalPathImage, want)
	}
	// e2e runs each TopoLVM node plugin from an image tagged with the version it is built from.
	for manifest, mod := range map[string]string{
		"e2e/testdata/topolvm-node.yaml":    "tools/k8s/topolvm/go.mod",
		"e2e/testdata/topolvm041-node.yaml": "tools/k8s/topolvm041/go.mod",
	} {
		if want := "image: plinth.local/topolvm-node:" + requiredVersion(t, mod, kubetest.TopoLVMModule); !strings.Contains(string(readRepoFile(t, manifest)), want) {
			t.Errorf("%s does not run %s (what %s builds)", manifest, want, mod)
		}
	}
	if want := "plinth.local/cloudnative-pg:" + strings.TrimPrefix(requiredVersion(t, "tools/k8s/cnpg/go.mod", kubetest.CNPGModule), "v"); kubeup.OperatorImage != want {
		t.Errorf("kubeup.OperatorImage %s, want %s", kubeup.OperatorImage, want)
	}
}
