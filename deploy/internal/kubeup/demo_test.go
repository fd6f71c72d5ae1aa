package kubeup

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/deploy/internal/composeup"
	"github.com/plinth-dev/plinth/deploy/internal/k8scheck"
)

// The example on kube-up's cluster runs the operand image make images builds, two small
// instances with cnpgi-plugin as WAL archiver, and the sidecar's store is the in-cluster S3;
// deploy/k8s/cnpg names the operator image Demo imports.
func TestDemoManifestsAgree(t *testing.T) {
	objs, err := k8scheck.Build("../../k8s/examples/postgres/local")
	if err != nil {
		t.Fatal(err)
	}
	var sawCluster, sawConfig bool
	for _, o := range objs {
		switch o.GetKind() + "/" + o.GetName() {
		case "Cluster/" + ExampleCluster:
			sawCluster = true
			spec := o.Object["spec"].(map[string]any)
			if spec["imageName"] != composeup.OperandImage || spec["instances"] != int64(2) || spec["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("Cluster spec: image %v (%v), %v instances; want %s, 2", spec["imageName"], spec["imagePullPolicy"], spec["instances"], composeup.OperandImage)
			}
			plugins, _ := spec["plugins"].([]any)
			if len(plugins) != 1 || plugins[0].(map[string]any)["name"] != "cnpgi.plinth.dev" || plugins[0].(map[string]any)["isWALArchiver"] != true {
				t.Errorf("Cluster plugins: %v", plugins)
			}
		case "ConfigMap/" + sidecarSecret:
			sawConfig = true
			data := o.Object["data"].(map[string]any)["config.yaml"].(string)
			if !strings.Contains(data, "endpoint: http://s3:7070") {
				t.Errorf("the sidecar's store is not the in-cluster S3:\n%s", data)
			}
		}
		if o.GetNamespace() != Namespace {
			t.Errorf("%s/%s is in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	if !sawCluster || !sawConfig {
		t.Errorf("no Cluster %s or ConfigMap %s in %d objects", ExampleCluster, sidecarSecret, len(objs))
	}

	raw, err := os.ReadFile("../../k8s/cnpg/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string
		Images    []struct{ Name, NewName, NewTag string }
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if k.Namespace != Namespace || len(k.Images) != 1 || k.Images[0].NewName+":"+k.Images[0].NewTag != OperatorImage {
		t.Errorf("deploy/k8s/cnpg: namespace %q, images %+v; want %s, %s", k.Namespace, k.Images, Namespace, OperatorImage)
	}
}
