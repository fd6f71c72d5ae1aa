package k8scheck

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// ErrNotBuiltIn marks an object whose kind is not a built-in Kubernetes type (a custom
// resource: cert-manager's, CloudNativePG's); only the API server, holding the CRD's schema,
// can check it.
var ErrNotBuiltIn = errors.New("not a built-in Kubernetes kind")

// strict decodes JSON into the registered Go type, failing on unknown and duplicate fields.
var strict = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	kjson.SerializerOptions{Strict: true})

// Typed decodes the object strictly into its k8s.io/api type: a misspelt or misplaced field —
// which kubectl apply would drop with at most a warning — is an error naming it.
func Typed(o Object) (runtime.Object, error) {
	if !scheme.Scheme.Recognizes(o.GVK()) {
		return nil, fmt.Errorf("%s: %s: %w", o, o.GVK(), ErrNotBuiltIn)
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	obj, _, err := strict.Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	return obj, nil
}
