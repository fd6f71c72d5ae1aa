package k8scheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// dryRunner applies objects to a real kube-apiserver as `kubectl apply --server-side
// --dry-run=server --validate=strict` does: defaulting, admission and validation run (the
// CRD schemas for custom resources), an unknown field is an error, nothing is stored.
type dryRunner struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (d *dryRunner) apply(ctx context.Context, o Object) (*unstructured.Unstructured, error) {
	gvk := o.GVK()
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: the API server serves no %s: %w", o, gvk, err)
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = d.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = d.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	force := true
	got, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager:    "plinth-deploy",
		Force:           &force,
		DryRun:          []string{metav1.DryRunAll},
		FieldValidation: metav1.FieldValidationStrict,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	return got, nil
}

// Every object of the example overlay (the base and CloudNativePG Clusters) passes a
// server-side dry run on a real kube-apiserver with cert-manager's and CloudNativePG's CRDs
// installed; mistakes of each kind are refused the same way.
func TestServerSideDryRun(t *testing.T) {
	// Skip (or fail under PLINTH_TEST_STRICT=1) before fetching the CRD modules.
	kubetest.Binary(t, "kube-apiserver-"+kubetest.DefaultVersion)
	objs := build(t, kustomizations[1])
	c := kubetest.Start(t, kubetest.Options{
		CRDs: append(kubetest.CertManagerCRDs(t), kubetest.CNPGCRDs(t)...),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := &dryRunner{
		dyn:    c.Dynamic(),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client().Discovery())),
	}

	// A dry run creates nothing, namespaces included: create them for real first.
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ns := &unstructured.Unstructured{Object: o.DeepCopy().Object}
			if _, err := c.Dynamic().Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", o, err)
			}
		}
	}
	kinds := map[string]int{}
	var errs []error
	for _, o := range objs {
		got, err := d.apply(ctx, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kinds[o.GetKind()]++
		if o.GetKind() != "Namespace" && got.GetUID() == "" {
			errs = append(errs, fmt.Errorf("%s: the dry run returned no object", o))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("server-side dry run:\n%v", err)
	}
	t.Logf("dry-run applied %d objects: %v", len(objs), kinds)
	for kind, want := range map[string]int{"Certificate": 9, "Issuer": 4, "Cluster": 2, "ScheduledBackup": 1, "DaemonSet": 1, "Deployment": 7} {
		if kinds[kind] != want {
			t.Errorf("%d %s objects went through the API server, want %d", kinds[kind], kind, want)
		}
	}
	// Nothing was stored.
	if _, err := c.Client().AppsV1().Deployments("plinth").Get(ctx, "gateway", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment gateway after a dry run: err = %v, want NotFound", err)
	}

	// The same dry run refuses what a cluster would refuse: a CRD schema's unknown field and
	// wrong type (cert-manager, CloudNativePG), and a built-in object's invalid value.
	for _, tc := range []struct {
		name, kind, obj string
		edit            func(u *unstructured.Unstructured) error
		want            string
	}{
		{"Certificate with a misspelt field", "Certificate", "cnpgi-plugin-server", func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedStringSlice(u.Object, []string{"cnpgi-plugin"}, "spec", "dnsName")
		}, ".spec.dnsName: field not declared in schema"},
		{"Issuer of a kind cert-manager lacks", "Issuer", "lvmd-agent-ca", func(u *unstructured.Unstructured) error {
			unstructured.RemoveNestedField(u.Object, "spec", "ca")
			return unstructured.SetNestedField(u.Object, map[string]any{"secretName": "x"}, "spec", "vault")
		}, "spec.vault"},
		{"Cluster with instances as text", "Cluster", "plinth-db", func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedField(u.Object, "three", "spec", "instances")
		}, "spec.instances"},
		{"ScheduledBackup with an unknown method", "ScheduledBackup", "pg-example-nightly", func(u *unstructured.Unstructured) error {
			return unstructured.SetNestedField(u.Object, "tape", "spec", "method")
		}, "spec.method"},
		{"DaemonSet with an unknown host path type", "DaemonSet", "lvmd-agent", func(u *unstructured.Unstructured) error {
			// The first hostPath volume, wherever it stands among the volumes.
			vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				if hp, ok := v.(map[string]any)["hostPath"].(map[string]any); ok {
					hp["type"] = "Socketish"
					return unstructured.SetNestedSlice(u.Object, vols, "spec", "template", "spec", "volumes")
				}
			}
			return errors.New("the lvmd-agent DaemonSet has no hostPath volume")
		}, "hostPath.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Object{find(t, objs, tc.kind, tc.obj).DeepCopy()}
			if err := tc.edit(o.Unstructured); err != nil {
				t.Fatal(err)
			}
			_, err := d.apply(ctx, o)
			if err == nil || !containsAll(err.Error(), tc.want) {
				t.Errorf("dry-run apply: err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
