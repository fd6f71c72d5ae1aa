// Package k8scheck builds the kustomizations under deploy/k8s and checks the objects they make
// as a careful reviewer would: decoded strictly into their Kubernetes API types, every Service
// selecting a workload's pods and ports, every Secret and ConfigMap declared or documented,
// every container probed, given resource requests and pinned to an image version.
package k8scheck

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Object is one object a kustomization produced.
type Object struct {
	*unstructured.Unstructured
}

// GVK is the object's group, version and kind.
func (o Object) GVK() schema.GroupVersionKind { return o.GroupVersionKind() }

// String names the object as kubectl does: "Kind/namespace/name".
func (o Object) String() string {
	if ns := o.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s/%s/%s", o.GetKind(), ns, o.GetName())
	}
	return fmt.Sprintf("%s/%s", o.GetKind(), o.GetName())
}

// Build runs kustomize (the library kubectl embeds, with kubectl's default options: files
// only from inside the kustomization, no plugins) on the directory and returns its objects in
// kustomize's output order.
func Build(dir string) ([]Object, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []Object
	for _, r := range rm.Resources() {
		// Through JSON, so numbers are int64/float64 as in every other unstructured object
		// (kustomize's own maps hold int, which runtime.DeepCopyJSON refuses).
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, Object{u})
	}
	return objs, nil
}
