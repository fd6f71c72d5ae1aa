package k8scheck

import (
	"slices"
	"testing"
)

const localOverlay = "../../k8s/overlays/local"

// overlays/local (make kube-up's) passes the checks the base passes, but for the Envoy
// contract (the Go gateway replaces Envoy there), and runs PostgreSQL and NATS besides.
func TestLocalOverlay(t *testing.T) {
	objs := build(t, localOverlay)
	s := decode(t, objs)
	runChecks(t, s, documented(t), false)
	var names []string
	for _, w := range s.Workloads {
		names = append(names, w.GetName())
	}
	for _, want := range []string{"auth", "stats", "kaas", "vagrant-server", "vagrant-runner", "lvmd-agent", "cnpgi-plugin", "gateway", "postgres", "nats"} {
		if !slices.Contains(names, want) {
			t.Errorf("no workload %s in %v", want, names)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "envoy-config" {
			t.Error("envoy-config is still in the build: nothing reads it")
		}
	}
}
