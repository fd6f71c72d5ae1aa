package kubetest_test

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

func TestParseCRDs(t *testing.T) {
	t.Parallel()
	stream := `
apiVersion: v1
kind: Namespace
metadata: {name: skipped}
---
# only a comment
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`
	crds, err := kubetest.ParseCRDs([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 || crds[0].Name != "widgets.example.com" || crds[0].Spec.Names.Kind != "Widget" {
		t.Fatalf("ParseCRDs = %+v, want the one Widget CRD", crds)
	}

	bad := map[string]string{
		"old API version": "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n",
		"unknown field":   "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec: {grup: b}\n",
		"not YAML":        "apiVersion: [\n",
	}
	for name, doc := range bad {
		if _, err := kubetest.ParseCRDs([]byte(doc)); err == nil {
			t.Errorf("%s: ParseCRDs accepted %q", name, doc)
		}
	}
}

// unstructuredFrom decodes a YAML manifest.
func unstructuredFrom(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// TestUpstreamCRDs installs the CRDs of every source the suite's tests use into one cluster
// and stores, reads back and updates the status of an object of each, the way the upstream
// operators write them.
func TestUpstreamCRDs(t *testing.T) {
	t.Parallel()
	sources := map[string]int{} // CRDs per source, to see each one contributed
	all := kubetest.RookCRDs(t)
	sources["rook"] = len(all)
	for name, crds := range map[string][]*apiextensionsv1.CustomResourceDefinition{
		"cert-manager":  kubetest.CertManagerCRDs(t),
		"cnpg":          kubetest.CNPGCRDs(t),
		"koor":          kubetest.KoorCRDs(t),
		"topolvm":       kubetest.TopoLVMCRDs(t),
		"topolvm v0.41": kubetest.TopoLVM041CRDs(t),
		"barman-cloud":  kubetest.BarmanCloudCRDs(t),
	} {
		sources[name] = len(crds)
		all = append(all, crds...)
	}
	t.Logf("CRDs per source: %v", sources)
	c := kubetest.Start(t, kubetest.Options{CRDs: all})
	t.Logf("up with %d CRDs in %s", len(all), c.StartupTime())

	for _, tc := range upstreamObjects {
		t.Run(tc.name, func(t *testing.T) {
			obj := unstructuredFrom(t, tc.manifest)
			gvr := schema.GroupVersionResource{Group: obj.GroupVersionKind().Group, Version: obj.GroupVersionKind().Version, Resource: tc.resource}
			api := c.Dynamic().Resource(gvr).Namespace(obj.GetNamespace())
			if obj.GetNamespace() != "" { // else cluster-scoped
				ensureNamespace(t, c, obj.GetNamespace())
			}
			status, hasStatus := obj.Object["status"]
			delete(obj.Object, "status")
			created, err := api.Create(ctx(t), obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %s: %v", tc.name, err)
			}
			for path, want := range tc.defaults {
				got, _, _ := unstructured.NestedFieldNoCopy(created.Object, strings.Split(path, ".")...)
				if fmt.Sprint(got) != want {
					t.Errorf("%s = %v after create, want the CRD's default %v", path, got, want)
				}
			}
			if hasStatus {
				created.Object["status"] = status
				updated, err := api.UpdateStatus(ctx(t), created, metav1.UpdateOptions{})
				if err != nil {
					t.Fatalf("update status: %v", err)
				}
				if got, _, _ := unstructured.NestedString(updated.Object, strings.Split(tc.statusPath, ".")...); got != tc.statusValue {
					t.Fatalf("%s = %q after UpdateStatus, want %q", tc.statusPath, got, tc.statusValue)
				}
			}
			invalid := unstructuredFrom(t, tc.manifest)
			delete(invalid.Object, "status")
			invalid.SetName(invalid.GetName() + "-invalid")
			if err := unstructured.SetNestedField(invalid.Object, tc.invalidValue, strings.Split(tc.invalidPath, ".")...); err != nil {
				t.Fatal(err)
			}
			if _, err := api.Create(ctx(t), invalid, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Fatalf("create with %s=%v: err = %v, want Invalid: the CRD's schema must be enforced", tc.invalidPath, tc.invalidValue, err)
			}
		})
	}
	t.Run("server-side dry-run apply", func(t *testing.T) {
		ensureNamespace(t, c, "plinth")
		testDryRunApply(t, c)
	})
}
