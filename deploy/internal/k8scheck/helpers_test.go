package k8scheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kustomizations under deploy/k8s; the test runs in deploy/internal/k8scheck.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

var kustomizations = []string{"../../k8s/base", "../../k8s/examples/postgres"}

const readmePath = "../../k8s/README.md"

func build(t *testing.T, dir string) []Object {
	t.Helper()
	objs, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func decode(t *testing.T, objs []Object) *Set {
	t.Helper()
	s, errs := Decode(objs)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return s
}

func documented(t *testing.T) Documented {
	t.Helper()
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ParseDocumented(data)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(readmePath), err)
	}
	return doc
}

// find returns the object of that kind and name (the name's prefix, for generated names with
// a hash suffix), failing the test when there is none.
func find(t *testing.T, objs []Object, kind, name string) Object {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (o.GetName() == name || strings.HasPrefix(o.GetName(), name+"-")) {
			return o
		}
	}
	t.Fatalf("no %s %s in the build", kind, name)
	return Object{}
}

// clone deep-copies a build so a test can break one object.
func clone(objs []Object) []Object {
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object{o.DeepCopy()}
	}
	return out
}

// wantError fails unless one of errs contains every fragment.
func wantError(t *testing.T, errs []error, fragments ...string) {
	t.Helper()
	for _, err := range errs {
		ok := true
		for _, f := range fragments {
			if !strings.Contains(err.Error(), f) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
	}
	t.Errorf("want an error containing %q, got %v", fragments, errs)
}

func countOf(s, sub string) int { return strings.Count(s, sub) }

func replaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }

func containsAll(s string, fragments ...string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}
