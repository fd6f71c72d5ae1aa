package k8scheck

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLocalPostgresTrustsNoOne: overlays/local's PostgreSQL ran with trust, open to every pod
// of the cluster (issue #36); now it asks for a password, and the check finds trust put back.
func TestLocalPostgresTrustsNoOne(t *testing.T) {
	objs := build(t, localOverlay)
	if err := errors.Join(CheckPostgresTrustsNoOne(decode(t, objs))...); err != nil {
		t.Fatal(err)
	}
	broken := clone(objs)
	o := find(t, broken, "Deployment", "postgres")
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	env := cs[0].(map[string]any)["env"].([]any)
	for _, e := range env {
		if e.(map[string]any)["name"] == "POSTGRES_HOST_AUTH_METHOD" {
			e.(map[string]any)["value"] = "trust"
		}
	}
	if err := unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	err := errors.Join(CheckPostgresTrustsNoOne(decode(t, broken))...)
	if err == nil || !strings.Contains(err.Error(), `Deployment/plinth/postgres: container "postgres": POSTGRES_HOST_AUTH_METHOD=trust`) {
		t.Fatalf("trust put back: %v", err)
	}
}
