package kubetest_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

const deploymentManifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: auth, namespace: plinth}
spec:
  replicas: 2
  selector: {matchLabels: {app: auth}}
  template:
    metadata: {labels: {app: auth}}
    spec:
      containers:
      - name: auth
        image: ghcr.io/plinth-dev/auth:dev
        ports: [{containerPort: 7001, name: grpc}]
        readinessProbe: {httpGet: {path: /readyz, port: 7101}}
`

// testDryRunApply is what deploy/k8s does to its manifests: server-side apply with
// dryRun=All, which runs defaulting, admission and schema validation and stores nothing.
// It needs the cert-manager CRDs and the namespace plinth.
func testDryRunApply(t *testing.T, c *kubetest.Cluster) {
	dryRun := metav1.ApplyOptions{FieldManager: "plinth-deploy", DryRun: []string{metav1.DryRunAll}}
	deployments := c.Dynamic().Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	certificates := c.Dynamic().Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"})

	for _, tc := range []struct {
		api      dynamic.NamespaceableResourceInterface
		manifest string
		// A field the server fills in, to prove the object went through defaulting.
		defaulted []string
		want      string
	}{
		{deployments, deploymentManifest, []string{"spec", "strategy", "type"}, "RollingUpdate"},
		{certificates, upstreamObjects[1].manifest, []string{"spec", "issuerRef", "kind"}, "Issuer"},
	} {
		obj := unstructuredFrom(t, tc.manifest)
		delete(obj.Object, "status")
		api := tc.api.Namespace(obj.GetNamespace())
		obj.SetName(obj.GetName() + "-dry-run")
		got, err := api.Apply(ctx(t), obj.GetName(), obj, dryRun)
		if err != nil {
			t.Fatalf("dry-run apply %s: %v", obj.GetKind(), err)
		}
		if v, _, _ := unstructured.NestedString(got.Object, tc.defaulted...); v != tc.want {
			t.Errorf("dry-run %s: %v = %q, want %q", obj.GetKind(), tc.defaulted, v, tc.want)
		}
		if len(got.GetManagedFields()) == 0 || got.GetManagedFields()[0].Manager != "plinth-deploy" {
			t.Errorf("dry-run %s: managedFields %+v, want the apply's field manager", obj.GetKind(), got.GetManagedFields())
		}
		if _, err := api.Get(ctx(t), obj.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s after a dry run: err = %v, want NotFound", obj.GetKind(), err)
		}
	}

	// Validation runs in a dry run: a selector that misses the template is refused.
	bad := unstructuredFrom(t, deploymentManifest)
	if err := unstructured.SetNestedStringMap(bad.Object, map[string]string{"app": "other"}, "spec", "selector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Namespace("plinth").Apply(ctx(t), "auth", bad, dryRun); !apierrors.IsInvalid(err) {
		t.Errorf("dry-run apply of a Deployment whose selector misses its template: err = %v, want Invalid", err)
	}
	// So does admission: a dry run cannot create a namespace for the next object.
	missing := unstructuredFrom(t, deploymentManifest)
	missing.SetNamespace("no-such-namespace")
	if _, err := deployments.Namespace("no-such-namespace").Apply(ctx(t), "auth", missing, dryRun); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run apply into a missing namespace: err = %v, want NotFound", err)
	}
}
